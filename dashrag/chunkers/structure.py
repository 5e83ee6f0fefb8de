"""Structure-aware chunking: every page and every section starts a chunk, then the recursive splitter cuts by size.

A converted file's text keeps its pages (form feeds) and headings (Markdown ATX; ``documents/structure.py``).
The text is first cut at every page and section start, so a chunk never runs from one page or section into
the next and its ``page``/``section`` say where all of its text is (a citation a user can open). A heading
with no text of its own (``# Methods`` right above ``## Sampling``) stays with the section it introduces. A
page or section longer than ``chunk_size`` is cut by the recursive character splitter (paragraphs, lines,
sentences, words; ``chunk_overlap`` inside it). Short pages and sections are not packed together: a chunk
of two pages would cite only the first.

Each chunk records where it starts: ``page`` (PDFs, 1-based) and ``section`` (the heading path,
``Methods › Sampling``; documents with headings), its own fields beside its document's metadata. A document
without structure (a BEIR abstract, a ``.txt`` file) is one segment, cut exactly as
``RecursiveCharacterChunker`` cuts it, and records nothing.

``contextual`` (off by default; measured in docs/documents.md, *Contextual chunks*) begins each chunk's
text with ``Title › Section`` (contextual chunk headers): what is indexed and embedded then names the
document and the section even for a chunk cut from the middle of one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

from pydantic import Field

from dashrag.chunkers.base import Chunker, LocatedSpan, SizedChunkParams
from dashrag.chunkers.recursive_character import Span, pack, split_pieces
from dashrag.core.registry import register
from dashrag.documents.model import Chunk, SourceDocument
from dashrag.documents.structure import PAGE_BREAK, SECTION_SEPARATOR, structure_of


class StructureChunkParams(SizedChunkParams):
    separators: list[str] = Field(default_factory=lambda: ["\n\n", "\n", ". ", " ", ""],
                                  description="Inside a section or page too long for one chunk: the boundaries to "
                                              "cut at, largest first; '' cuts anywhere.")
    contextual: bool = Field(False, description=(
        "Begin every chunk's text (what is indexed, embedded and shown) with its document's title and section "
        "path, so a chunk cut from the middle of a long section still names what it is about."))


def segments(text: str, boundaries: list[int]) -> list[Span]:
    """``text`` cut at ``boundaries`` (ascending offsets inside it), each part without the form feeds that end
    its page (a page break is no text of either page)."""
    edges = [0, *boundaries, len(text)]
    parts = [(a, a + len(text[a:b].rstrip(PAGE_BREAK))) for a, b in zip(edges, edges[1:])]
    return [(a, b) for a, b in parts if b > a]


def sections_with_bodies(text: str, parts: list[Span], heading_starts: set[int],
                         page_starts: set[int]) -> list[tuple[int, int, int]]:
    """``(start, body, end)`` per segment that has text under its heading: a segment that is a heading alone
    (``# Methods`` right above ``## Sampling``) joins the next one, whose text it introduces; ``body`` is where
    that next segment starts (what the chunk's section is read at: ``Methods › Sampling``). Never across a page
    break: a slide holding only its title stays a chunk of its own page."""
    groups: list[tuple[int, int, int]] = []
    pending: Span | None = None  # the headings alone waiting for their text
    for start, end in parts:
        if pending is not None and start in page_starts:
            groups.append((pending[0], pending[0], pending[1]))
            pending = None
        line_end = text.find("\n", start, end)
        heading_alone = start in heading_starts and (line_end < 0 or not text[line_end:end].strip())
        if heading_alone and end < len(text):
            pending = (start if pending is None else pending[0], end)
            continue
        groups.append((start if pending is None else pending[0], start, end))
        pending = None
    if pending is not None:
        groups.append((pending[0], pending[0], pending[1]))
    return groups


def cut(text: str, groups: list[tuple[int, int, int]], params: StructureChunkParams) -> list[tuple[int, int, int]]:
    """``(start, end, where)`` per chunk: each group whole when it fits in ``chunk_size``, else cut by the
    recursive character splitter (``chunk_overlap`` inside it); ``where`` is the offset the chunk's page and
    section are read at."""
    size = params.chunk_size
    chunks: list[tuple[int, int, int]] = []
    for start, body, end in groups:
        if end - start <= size:
            chunks.append((start, end, body))
            continue
        for a, b in pack(split_pieces(text, (start, end), params.separators, size), size, params.chunk_overlap):
            chunks.append((a, b, max(a, body)))
    return chunks


@register(
    kind="chunker",
    icon="Scissors",
    category="chunking",
    en=("Structure-aware chunker", "Cuts converted files at pages and sections first, then by size; each chunk "
                                   "records its page and section."),
    es=("Fragmentador por estructura", "Corta los archivos convertidos primero en páginas y secciones, luego por "
                                       "tamaño; cada fragmento guarda su página y su sección."),
    representation={
        "en": "pages and sections, ≤{chunk_size} chars, overlap {chunk_overlap}",
        "es": "páginas y secciones, ≤{chunk_size} caracteres, solapamiento {chunk_overlap}",
    },
)
class StructureChunker(Chunker[StructureChunkParams]):
    def chunk(self, documents: Iterable[SourceDocument]) -> list[Chunk]:
        """The chunks; with ``contextual``, each text begins with its context line (:func:`context_line`). Its
        ``start``/``end`` still locate the document's own text, so such a chunk's offsets are not its text's
        (neighbour windows then join chunks with the separator instead of trimming their overlap)."""
        documents = list(documents)
        chunks = super().chunk(documents)
        if not self.params.contextual:
            return chunks
        titles = {d.id: d.title or _title(d.metadata) for d in documents}
        out = []
        for c in chunks:
            line = context_line(titles[c.document_id], c.fields.get("section"))
            out.append(replace(c, text=f"{line}\n\n{c.text}") if line else c)
        return out

    def spans(self, text: str) -> list[Span]:
        """A text without a document (no structure known): the recursive character chunker's spans."""
        p = self.params
        return pack(split_pieces(text, (0, len(text)), p.separators, p.chunk_size), p.chunk_size, p.chunk_overlap)

    def located_spans(self, document: SourceDocument, text: str) -> list[LocatedSpan]:
        structure = structure_of(text, document.metadata)
        if not structure.page_starts and not structure.heading_starts:
            return [(s, e, {}) for s, e in self.spans(text)]
        groups = sections_with_bodies(text, segments(text, structure.boundaries), set(structure.heading_starts),
                                      set(structure.page_starts))
        return [(start, end, structure.fields_at(_first_visible(text, where, end)))
                for start, end, where in cut(text, groups, self.params)]


def context_line(title: str, section: Any) -> str:
    """``Title › Methods › Sampling``: the document's title then the section path, the title once (a Markdown
    file's first heading is usually its title); empty when the chunk has neither."""
    parts = [title] if title else []
    if isinstance(section, str) and section:
        path = section.split(SECTION_SEPARATOR)
        parts += path[1:] if parts and path[0] == title else path
    return SECTION_SEPARATOR.join(parts)


def _title(metadata: Mapping[str, Any]) -> str:
    title = metadata.get("title")
    return title if isinstance(title, str) else ""


def _first_visible(text: str, start: int, end: int) -> int:
    """The offset of the span's first character that is not whitespace (a chunk that starts with the blank
    line closing a page starts, for a reader, on the next one's text)."""
    stripped = len(text[start:end]) - len(text[start:end].lstrip())
    return min(start + stripped, max(start, end - 1))
