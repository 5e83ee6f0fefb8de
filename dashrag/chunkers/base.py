"""What a chunker is: a component that cuts a text into ``(start, end)`` spans.

Chunkers return spans rather than strings so every chunk keeps its character
offsets into the document (for highlighting, and for merging neighbour windows
back into the original text).
"""

from __future__ import annotations

from typing import Iterable, TypeVar

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


class Chunker(ConfigObject[P]):
    def spans(self, text: str) -> list[tuple[int, int]]:
        raise NotImplementedError

    def chunk(self, documents: Iterable[SourceDocument]) -> list[Chunk]:
        """Chunks of every document; ids are consecutive integers in corpus order."""
        chunks: list[Chunk] = []
        for doc in documents:
            text = full_text(doc)
            spans = [(s, e) for s, e in self.spans(text) if text[s:e].strip()]
            for position, (start, end) in enumerate(spans):
                chunks.append(Chunk(id=len(chunks), document_id=doc.id, position=position,
                                    text=text[start:end], start=start, end=end, metadata=doc.metadata))
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
