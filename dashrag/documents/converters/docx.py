"""DOCX: paragraphs and tables in document order, heading styles as Markdown headings, with python-docx.

A DOCX is a zip: its members' declared sizes are summed before anything is unpacked, so a zip
bomb is refused by the cap on the decompressed size (``ReadLimits.max_unpacked_mb``).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from dashrag.documents.converters.result import ConversionFailed, Converted, ReadLimits

_HEADING = re.compile(r"^Heading (\d)$")


def check_unpacked_size(path: Path, limits: ReadLimits, what: str) -> None:
    """Refuse a zip whose members would unpack to more than the cap (or that is no zip at all)."""
    try:
        with zipfile.ZipFile(path) as archive:
            size = sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConversionFailed(f"not a valid {what} (a {what} is a zip archive: {exc})") from None
    if size > limits.max_unpacked_bytes:
        raise ConversionFailed(f"unpacks to {size / 2**20:.0f} MiB, more than the cap of {limits.max_unpacked_mb:g} "
                               "MiB (DASHRAG_MAX_UNPACKED_MB; a zip bomb?)")


def convert_docx(path: Path, limits: ReadLimits) -> Converted:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    check_unpacked_size(path, limits, "DOCX")
    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise ConversionFailed(f"not a valid DOCX ({exc})") from None
    blocks: list[str] = []
    first_heading = ""
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            blocks.append("\n".join(" | ".join(cell.text.strip() for cell in row.cells) for row in item.rows))
            continue
        text = item.text.strip()
        if not text:
            continue
        style = item.style.name if item.style is not None else ""
        level = 1 if style == "Title" else int(m.group(1)) if (m := _HEADING.match(style or "")) else 0
        if level:
            first_heading = first_heading or text
            text = "#" * level + " " + " ".join(text.split())
        blocks.append(text)
    title = (document.core_properties.title or "").strip() or first_heading
    return Converted(("\n\n".join(blocks),), title=title)
