"""Where a converted document's pages and sections start, read back from its text.

The converters keep a file's structure inside its one text (docs/documents.md): a form feed between PDF
pages and PPTX slides (as ``pdftotext`` writes) and Markdown ATX headings (``## Methods``) for DOCX heading
styles, HTML ``h1``-``h6``, slide titles and Markdown files. So the structure is a pure function of the text
and the document's ``file_type``: nothing beside the text is stored, and a sync or an update finds the same
structure as a rebuild.

Which documents have which marks is decided by ``file_type`` (what the folder read records), not guessed
from the text: a BEIR abstract or a ``.txt`` file beginning ``# 1 reason`` has no headings, and a form feed
in a text file is not a page break of anything the user can open.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any, Mapping

PAGED_TYPES = frozenset({"pdf", "pptx"})  # a PPTX's pages are its slides
HEADED_TYPES = frozenset({"md", "docx", "html", "pptx"})  # a slide's title is a heading
PAGE_BREAK = "\f"
SECTION_SEPARATOR = " › "

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)


@dataclass(frozen=True)
class Structure:
    """A text's page starts (ascending offsets; empty: not paged) and headings (offset, path), ascending."""

    page_starts: tuple[int, ...] = ()
    heading_starts: tuple[int, ...] = ()
    heading_paths: tuple[str, ...] = ()

    @property
    def boundaries(self) -> list[int]:
        """Every offset where a page or a section starts (ascending, without 0): where a chunk must be able to end."""
        return sorted({*self.page_starts, *self.heading_starts} - {0})

    def fields_at(self, offset: int) -> dict[str, Any]:
        """``page`` (1-based) and ``section`` (the heading path) of the text starting at ``offset``; each only
        where the document has it (a chunk before the first heading has no section)."""
        fields: dict[str, Any] = {}
        if self.page_starts:
            fields["page"] = bisect.bisect_right(self.page_starts, offset)
        found = bisect.bisect_right(self.heading_starts, offset)
        if found:
            fields["section"] = self.heading_paths[found - 1]
        return fields


def structure_of(text: str, metadata: Mapping[str, Any]) -> Structure:
    """The structure of a document's text, by its ``file_type`` (see the module's docstring)."""
    file_type = metadata.get("file_type")
    pages = _page_starts(text) if file_type in PAGED_TYPES else ()
    starts, paths = _headings(text) if file_type in HEADED_TYPES else ((), ())
    return Structure(pages, starts, paths)


def _page_starts(text: str) -> tuple[int, ...]:
    starts = [0]
    at = text.find(PAGE_BREAK)
    while at >= 0:
        starts.append(at + 1)
        at = text.find(PAGE_BREAK, at + 1)
    return tuple(starts)


def _headings(text: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Every ATX heading outside a fenced code block, with its path (the enclosing headings' texts)."""
    text = text.replace(PAGE_BREAK, "\n")  # a page's first line starts a line (same offsets)
    fenced = _fenced_ranges(text)
    starts: list[int] = []
    paths: list[str] = []
    stack: list[tuple[int, str]] = []  # (level, heading text) of the enclosing headings
    for match in _HEADING.finditer(text):
        if any(a <= match.start() < b for a, b in fenced):
            continue
        title = " ".join(match.group(2).split())
        if not title:
            continue
        level = len(match.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        starts.append(match.start())
        paths.append(SECTION_SEPARATOR.join(t for _, t in stack))
    return tuple(starts), tuple(paths)


def _fenced_ranges(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets of fenced code blocks (an unclosed fence runs to the end)."""
    ranges: list[tuple[int, int]] = []
    opened: tuple[int, str] | None = None
    for match in _FENCE.finditer(text):
        if opened is None:
            opened = (match.start(), match.group(1))
        elif match.group(1) == opened[1]:
            ranges.append((opened[0], match.end()))
            opened = None
    if opened is not None:
        ranges.append((opened[0], len(text)))
    return ranges
