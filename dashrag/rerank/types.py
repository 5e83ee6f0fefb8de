"""The values the rag-reranker's API passes around: what a caller hands in (``ChunkRef``), what a hydrator
makes of it (``Chunk``), and who is asking (``RequestContext``).

They are named as the reference names them, so code written against ``rag_reranker`` reads the same.
They are not :class:`dashrag.documents.Chunk`: these come from somewhere else (a vector database, another
service), carry the caller's own ids (strings or integers) and a mutable ``score`` that the precise stage
writes, as the reference's ``Chunk.score`` is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dashrag.errors import QueryError

ChunkId = str | int


@dataclass(frozen=True)
class RequestContext:
    """Who is asking: the tenant a hydrator or a hosted reranker may need (the reference's ``ctx``)."""

    tenant_id: str = "dashrag-local"


@dataclass(frozen=True)
class ChunkRef:
    """A candidate before hydration: its id and its first-stage score (higher is better)."""

    id: ChunkId
    score: float = 0.0


@dataclass
class Chunk:
    """A hydrated candidate: its text, its score (the last stage's that scored it) and metadata.

    ``metadata['embedding']``, when every candidate carries one, is what MMR compares candidates by.
    """

    id: ChunkId
    text: str
    score: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)


#: ``async (ctx, refs) -> list[Chunk]``: turns references into chunks (loads their text and metadata).
Hydrator = Callable[[RequestContext, Sequence[ChunkRef]], Awaitable[list[Chunk]]]


class MemoryHydrator:
    """A hydrator over chunks already in memory, by id: for candidates a caller holds whole (the CLI's demo
    set, tests, a small service). An id it does not hold is a QueryError naming it, never a silent drop."""

    def __init__(self, chunks: Sequence[Chunk]):
        self._by_id: Mapping[ChunkId, Chunk] = {c.id: c for c in chunks}
        if len(self._by_id) != len(chunks):
            raise QueryError("MemoryHydrator: two chunks share an id")

    async def __call__(self, ctx: RequestContext, refs: Sequence[ChunkRef]) -> list[Chunk]:
        unknown = [r.id for r in refs if r.id not in self._by_id]
        if unknown:
            raise QueryError(f"no chunk with id {unknown[0]!r}" + (f" (and {len(unknown) - 1} more)" if unknown[1:]
                                                                     else ""))
        return [Chunk(r.id, self._by_id[r.id].text, r.score, dict(self._by_id[r.id].metadata)) for r in refs]

    def refs(self) -> list[ChunkRef]:
        """A reference to every chunk held, in order, with its score."""
        return [ChunkRef(c.id, c.score) for c in self._by_id.values()]
