"""The reranker SPI of the rag-reranker: what :class:`~dashrag.rerank.pipeline.RerankPipeline` asks of a backend.

A backend implements ``precise_rerank`` (required: score the chunks, write each returned chunk's ``score``,
return the best ``top_n`` best first); ``fast_rerank`` (stage 1 over references, before hydration) defaults to
keeping the first ``top_n`` without re-scoring, and ``should_early_exit`` (are the stage-1 scores decisive
enough to skip stage 2?) to never. The methods that may wait on a model or a server are async.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from dashrag.rerank.types import Chunk, ChunkRef, RequestContext


class Reranker(ABC):
    """A reranking backend (the reference's ``Reranker``): subclass it and implement :meth:`precise_rerank`."""

    @property
    def name(self) -> str:
        """What the CLI's ``backend:`` line shows: the class's name."""
        return type(self).__name__

    async def fast_rerank(self, ctx: RequestContext, query: str, candidates: Sequence[ChunkRef],
                          top_n: int) -> list[ChunkRef]:
        """Stage 1: narrow the references to ``top_n``. Default: the first ``top_n``, not re-scored."""
        return list(candidates[:top_n])

    def should_early_exit(self, stage1_scores: Sequence[float]) -> bool:
        """Whether stage 1's scores are decisive, so stage 2 and MMR are skipped. Default: never."""
        return False

    @abstractmethod
    async def precise_rerank(self, ctx: RequestContext, query: str, chunks: Sequence[Chunk],
                             top_n: int) -> list[Chunk]:
        """Stage 2: score ``chunks`` for ``query``, write each returned chunk's ``score``, return the best
        ``top_n``, best first."""
