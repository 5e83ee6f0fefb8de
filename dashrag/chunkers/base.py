"""What a chunker is: a component that cuts a text into ``(start, end)`` spans.

Chunkers return spans rather than strings so every chunk keeps its character
offsets into the document (for highlighting, and for merging neighbour windows
back into the original text).
"""

from __future__ import annotations

from typing import Any, Iterable, TypeVar

from pydantic import Field

from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams, Rule
from dashrag.documents.corpus import full_text
from dashrag.documents.model import Chunk, SourceDocument

P = TypeVar("P", bound=ComponentParams)


def _overlap_smaller(params: SizedChunkParams) -> str | None:
    if params.chunk_overlap >= params.chunk_size:
        return f"chunk_overlap ({params.chunk_overlap}) must be < chunk_size ({params.chunk_size})"
    return None


class SizedChunkParams(ComponentParams):
    chunk_size: int = Field(1000, ge=1, le=1000000, description="Largest chunk, in the chunker's unit.")
    chunk_overlap: int = Field(100, ge=0, le=1000000, description=(
        "How much consecutive chunks share, in the same unit."))
    RULES = (Rule("lt", ("chunk_overlap", "chunk_size"), "chunk_overlap must be smaller than chunk_size",
                  _overlap_smaller),)


LocatedSpan = tuple[int, int, dict[str, Any]]  # start, end, the chunk's own fields (page, section)


class Chunker(ConfigObject[P]):
    def spans(self, text: str) -> list[tuple[int, int]]:
        raise NotImplementedError

    def located_spans(self, document: SourceDocument, text: str) -> list[LocatedSpan]:
        """The spans of ``text`` (``document``'s full text), each with the fields the chunk records about where
        it is; a chunker that knows nothing of a document's structure records none."""
        return [(s, e, {}) for s, e in self.spans(text)]

    def chunk(self, documents: Iterable[SourceDocument]) -> list[Chunk]:
        """Chunks of every document; ids are consecutive integers in corpus order."""
        chunks: list[Chunk] = []
        for doc in documents:
            text = full_text(doc)
            spans = [span for span in self.located_spans(doc, text) if text[span[0]:span[1]].strip()]
            for position, (start, end, fields) in enumerate(spans):
                chunks.append(Chunk(id=len(chunks), document_id=doc.id, position=position, text=text[start:end],
                                    start=start, end=end, metadata=doc.metadata, fields=fields))
        return chunks


def sliding_windows(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Half-open index windows of ``size`` over ``range(n)`` that share ``overlap`` items."""
    if n == 0:
        return []
    step = size - overlap
    windows, start = [], 0
    while True:
        windows.append((start, min(start + size, n)))
        if start + size >= n:
            return windows
        start += step
