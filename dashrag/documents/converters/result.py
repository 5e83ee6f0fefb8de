"""What a converter returns, what stops it, and the bounds every file is held to.

A converted file is plain text that keeps its structure in two marks a chunker can find
without a side channel: pages are separated by a form feed (``\\f``, as pdftotext writes
them) and headings are Markdown ATX lines (``## Methods``). So one string is what the
store keeps, what a sync hashes, and what the structure-aware chunker reads pages and
sections from; a ``.md`` file needs no conversion to have sections.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

PAGE_BREAK = "\f"


class ConversionFailed(Exception):
    """A file of a known type that cannot be read; the message is the reason shown beside its name."""


@dataclass(frozen=True)
class Converted:
    """One file's text, page by page (one page for formats without pages), and its own title ("" if none)."""

    pages: tuple[str, ...]
    title: str = ""
    paged: bool = False  # the format has pages (PDF): chunks record the page they start on

    @property
    def text(self) -> str:
        return PAGE_BREAK.join(self.pages)


class ReadLimits(BaseSettings):
    """Per-file bounds of a folder read, so one hostile or broken file costs one line, not the machine.

    Settings: the environment (``DASHRAG_MAX_FILE_MB``, ``DASHRAG_MAX_UNPACKED_MB``, ``DASHRAG_MAX_PAGES``,
    ``DASHRAG_FILE_TIMEOUT_S``) or the constructor."""

    model_config = SettingsConfigDict(env_prefix="DASHRAG_", extra="ignore", frozen=True)

    max_file_mb: float = Field(100.0, gt=0, description="Largest file read, in MiB (on disk).")
    max_unpacked_mb: float = Field(200.0, gt=0, description=(
        "Largest decompressed size of a zipped format (DOCX, PPTX), in MiB: a zip bomb stops here."))
    max_pages: int = Field(5000, ge=1, description="Most pages of one PDF.")
    timeout_s: float = Field(60.0, gt=0, description="Longest one file may take to convert.")

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)

    @property
    def max_unpacked_bytes(self) -> int:
        return int(self.max_unpacked_mb * 1024 * 1024)
