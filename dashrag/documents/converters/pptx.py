"""PPTX: each slide's text in reading order, one page per slide, its title as a Markdown heading, with python-pptx.

A slide has no text flow, only shapes placed on it: they are read top to bottom, then left to right (what a
reader's eye does on a slide), group shapes opened, a table's rows as cells joined by `` | `` (as DOCX tables).
The slide's title placeholder becomes a ``##`` heading, so a chunk of a deck records its slide as ``page`` and
its slide title as ``section``; speaker notes are not read (not what the audience saw). A PPTX is a zip: its
unpacked size is capped before anything is opened (as DOCX).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dashrag.documents.converters.docx import check_unpacked_size
from dashrag.documents.converters.result import ConversionFailed, Converted, ReadLimits


def convert_pptx(path: Path, limits: ReadLimits) -> Converted:
    import pptx
    from pptx.exc import PackageNotFoundError

    check_unpacked_size(path, limits, "PPTX")
    try:
        deck = pptx.Presentation(str(path))
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise ConversionFailed(f"not a valid PPTX ({exc})") from None
    if len(deck.slides) > limits.max_pages:
        raise ConversionFailed(f"{len(deck.slides)} slides, more than the cap of {limits.max_pages} "
                               "(DASHRAG_MAX_PAGES)")
    pages = [_slide_text(slide) for slide in deck.slides]
    title = (deck.core_properties.title or "").strip() or next(
        (line[3:] for page in pages for line in page.splitlines()[:1] if line.startswith("## ")), "")
    return Converted(tuple(pages), title=title, paged=True)


def _slide_text(slide: Any) -> str:
    title_shape = slide.shapes.title
    blocks = []
    if title_shape is not None and title_shape.text_frame.text.strip():
        blocks.append("## " + " ".join(title_shape.text_frame.text.split()))
    for shape in _in_reading_order(slide.shapes):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        text = _shape_text(shape)
        if text:
            blocks.append(text)
    return "\n\n".join(blocks)


def _in_reading_order(shapes: Any) -> Iterator[Any]:
    """Shapes top to bottom, then left to right; a group's shapes in place of the group."""
    placed = sorted(shapes, key=lambda s: (s.top or 0, s.left or 0))
    for shape in placed:
        if shape.shape_type is not None and getattr(shape, "shapes", None) is not None:  # a group
            yield from _in_reading_order(shape.shapes)
        else:
            yield shape


def _shape_text(shape: Any) -> str:
    if getattr(shape, "has_table", False) and shape.has_table:
        return "\n".join(" | ".join(cell.text.strip() for cell in row.cells) for row in shape.table.rows)
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        lines = [" ".join(p.text.split()) for p in shape.text_frame.paragraphs]
        return "\n".join(line for line in lines if line)
    return ""
