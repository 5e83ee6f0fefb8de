"""HTML: the main content without navigation, header, footer and other boilerplate, with trafilatura.

trafilatura writes the content as Markdown, so headings stay headings (sections). The bytes are
decoded as the file declares (BOM, ``<meta charset>``), else as UTF-8, else as what
charset-normalizer finds; a file none of these decodes is a failure naming why.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from dashrag.documents.converters.result import ConversionFailed, Converted, ReadLimits

_DECLARED = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def decode_html(raw: bytes) -> str:
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                          (codecs.BOM_UTF16_BE, "utf-16")):
        if raw.startswith(bom):
            return raw.decode(encoding)
    declared = _DECLARED.search(raw[:4096])
    if declared:
        name = declared.group(1).decode("ascii", "replace")
        try:
            return raw.decode(codecs.lookup(name).name)
        except LookupError:
            pass  # an encoding no one knows: fall through to what the bytes are
        except UnicodeDecodeError:
            pass
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(raw).best()
    if best is None:
        raise ConversionFailed("unknown text encoding (not the declared one, not UTF-8, none detected)")
    return str(best)


def convert_html(path: Path, limits: ReadLimits) -> Converted:
    import trafilatura
    from lxml.html import fromstring

    text = decode_html(path.read_bytes())
    body = trafilatura.extract(text, output_format="markdown", include_comments=False, include_tables=True,
                               include_links=False, include_images=False, favor_recall=True)
    if not body or not body.strip():
        raise ConversionFailed("no main content found (an empty page, or one made only of navigation)")
    title = ""
    found = _TITLE.search(text)
    if found:
        title = " ".join(fromstring(f"<p>{found.group(1)}</p>").text_content().split())
    if not title:
        title = next((line.lstrip("#").strip() for line in body.splitlines() if line.startswith("#")), "")
    return Converted((body,), title=title)
