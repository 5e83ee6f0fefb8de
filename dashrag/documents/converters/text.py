"""Plain text and Markdown: the file as it is (UTF-8); a Markdown file's title is its first heading."""

from __future__ import annotations

from pathlib import Path

from dashrag.documents.converters.result import ConversionFailed, Converted, ReadLimits


def convert_text(path: Path, limits: ReadLimits) -> Converted:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConversionFailed(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    return Converted((text,), title=first_heading(text))


def first_heading(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and stripped.lstrip("#").startswith(" "):
            return stripped.lstrip("#").strip()
    return ""
