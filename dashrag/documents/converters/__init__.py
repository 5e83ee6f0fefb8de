"""File converters, one module per format, chosen by file extension (docs/documents.md).

``converter_for(path)`` is the one lookup: a :class:`FileType` names the format (the ``file_type``
metadata value), the function that converts it, and whether it runs in the worker process (the
formats parsed by C libraries or zip readers, where a hostile file can hang or crash: the per-file
timeout and crash isolation of :mod:`.worker`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dashrag.documents.converters.docx import convert_docx
from dashrag.documents.converters.html import convert_html
from dashrag.documents.converters.pdf import convert_pdf
from dashrag.documents.converters.pptx import convert_pptx
from dashrag.documents.converters.result import ConversionFailed, Converted, ReadLimits
from dashrag.documents.converters.text import convert_text

Convert = Callable[[Path, ReadLimits], Converted]


@dataclass(frozen=True)
class FileType:
    name: str  # the document's ``file_type``
    convert: Convert
    isolated: bool  # converted in the worker process (timeout, crash isolation)


_TYPES = (
    (FileType("txt", convert_text, False), (".txt",)),
    (FileType("md", convert_text, False), (".md", ".markdown")),
    (FileType("pdf", convert_pdf, True), (".pdf",)),
    (FileType("docx", convert_docx, True), (".docx",)),
    (FileType("html", convert_html, True), (".html", ".htm", ".xhtml")),
    (FileType("pptx", convert_pptx, True), (".pptx",)),
)
BY_SUFFIX: dict[str, FileType] = {suffix: kind for kind, suffixes in _TYPES for suffix in suffixes}
FILE_TYPES: dict[str, FileType] = {kind.name: kind for kind, _ in _TYPES}


def converter_for(path: Path) -> FileType | None:
    """The format of ``path`` by its extension (any case), or None for one dashrag does not read."""
    return BY_SUFFIX.get(path.suffix.lower())


__all__ = ["BY_SUFFIX", "FILE_TYPES", "ConversionFailed", "Converted", "FileType", "ReadLimits", "converter_for"]
