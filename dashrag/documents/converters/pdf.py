"""PDF: the text layer, page by page, with pypdfium2 (PDFium, the engine of Chrome's viewer).

Why pypdfium2: a self-contained wheel (no system library), the fastest text layer of the
candidates measured (docs/documents.md), and text in reading order per page. A PDF without
a text layer (a scan) has nothing to index: it is a failure that says OCR is needed,
never an empty document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dashrag.documents.converters.result import ConversionFailed, Converted, ReadLimits

_NO_TITLE = {"untitled", "untitled document"}  # what PDF writers put when the author gave none


def convert_pdf(path: Path, limits: ReadLimits) -> Converted:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        reason = str(exc)
        if "password" in reason.lower():
            raise ConversionFailed("encrypted PDF (needs a password)") from None
        raise ConversionFailed(f"not a readable PDF ({reason})") from None
    try:
        count = len(pdf)
        if count > limits.max_pages:
            raise ConversionFailed(f"{count} pages, more than the cap of {limits.max_pages} (DASHRAG_MAX_PAGES)")
        pages = tuple(_page_text(pdf[i]) for i in range(count))
        title = str(pdf.get_metadata_dict().get("Title", "") or "").strip()
    finally:
        pdf.close()
    if not any(p.strip() for p in pages):
        raise ConversionFailed(f"no text layer on its {count} page(s) (a scanned PDF? dashrag does no OCR)")
    if title.lower() in _NO_TITLE:
        title = ""
    return Converted(pages, title=title or _first_line(pages), paged=True)


def _page_text(page: Any) -> str:
    text_page = page.get_textpage()
    try:
        text = text_page.get_text_bounded()
    finally:
        text_page.close()
        page.close()
    # PDFium ends lines with \r\n and may hold form feeds of its own; one page is one page.
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")


def _first_line(pages: tuple[str, ...]) -> str:
    for page in pages:
        for line in page.splitlines():
            if line.strip():
                return line.strip()[:200]
    return ""
