"""RerankPipeline: the rag-reranker's two-stage cascade with optional MMR, as its reference prints it.

``chunks = await RerankPipeline(reranker=..., hydrator=...).rerank(ctx, query, refs, top_k=10)``:

1. **fast**: ``reranker.fast_rerank(ctx, query, refs, top_n=stage1_top_n)`` narrows the references;
2. **early exit**: when ``reranker.should_early_exit(stage-1 scores)``, the top ``top_k`` references are
   hydrated and returned with their stage-1 scores; stage 2 and MMR are skipped;
3. **hydrate**: ``hydrator(ctx, refs)`` turns the stage-1 references into chunks;
4. **precise**: ``reranker.precise_rerank(ctx, query, chunks, top_n=stage2_top_n)`` scores them;
5. **mmr** (with an :class:`MMRConfig` and more than one candidate): re-orders for diversity, by each
   chunk's ``metadata['embedding']`` when every chunk carries one, else by the ``embedder``'s vectors.

The answer is cut to ``top_k``. A failure in any step is a :class:`~dashrag.errors.RerankerError` whose
``stage`` (and ``context['stage']``) names it: ``fast``, ``early_exit``, ``hydrate``, ``precise``, ``mmr``
(MMR asked for, but no embeddings to be had). The steps are timed and wrapped by the rerank cascade's own
:func:`~dashrag.retrievers.rerank_cascade.stage`, so the cascade and this pipeline report failures alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from dashrag.errors import ConfigError, RerankerError
from dashrag.rerank.mmr import MMRConfig, mmr_rerank
from dashrag.rerank.spi import Reranker
from dashrag.rerank.types import Chunk, ChunkRef, Hydrator, RequestContext
from dashrag.retrievers.rerank_cascade import stage


class Embedder(Protocol):
    """What MMR embeds chunks with when they carry no ``metadata['embedding']``: any dashrag embedding component
    (or anything with ``embed_documents(texts) -> rows``)."""

    def embed_documents(self, texts: list[str]) -> Any: ...


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name}: expected a positive integer, got {value!r}")
    return value


class RerankPipeline:
    """References in, reranked chunks out: fast, early exit, hydrate, precise, MMR (see the module)."""

    def __init__(self, reranker: Reranker, hydrator: Hydrator, embedder: Embedder | None = None,
                 mmr: MMRConfig | None = None, stage1_top_n: int = 50, stage2_top_n: int = 20):
        if not isinstance(reranker, Reranker):
            raise ConfigError(f"reranker: expected a dashrag.rerank.Reranker, got {type(reranker).__name__}")
        if not callable(hydrator):
            raise ConfigError(f"hydrator: expected an async callable (ctx, refs) -> chunks, got "
                              f"{type(hydrator).__name__}")
        if mmr is not None and not isinstance(mmr, MMRConfig):
            raise ConfigError(f"mmr: expected an MMRConfig, got {type(mmr).__name__}")
        self.reranker, self.hydrator, self.embedder, self.mmr = reranker, hydrator, embedder, mmr
        self.stage1_top_n = _positive("stage1_top_n", stage1_top_n)
        self.stage2_top_n = _positive("stage2_top_n", stage2_top_n)
        self.timings: dict[str, float] = {}  # the last call's milliseconds per step

    async def rerank(self, ctx: RequestContext, query: str, refs: Sequence[ChunkRef], top_k: int = 10) -> list[Chunk]:
        """The best ``top_k`` chunks for ``query`` among ``refs``, best first (see the module for the steps)."""
        top_k = _positive("top_k", top_k)
        timings: dict[str, float] = {}
        self.timings = timings
        context = {"query": query, "candidates": len(refs), "reranker": self.reranker.name}
        with stage("fast", timings, context):
            narrowed = await self.reranker.fast_rerank(ctx, query, list(refs), top_n=self.stage1_top_n)
        with stage("early_exit", timings, context):
            exit_now = bool(self.reranker.should_early_exit([r.score for r in narrowed]))
        if exit_now:
            chosen = narrowed[:top_k]
            with stage("hydrate", timings, context):
                chunks = await self.hydrator(ctx, chosen)
            return _with_scores(chunks, chosen)
        with stage("hydrate", timings, context):
            chunks = await self.hydrator(ctx, narrowed)
        with stage("precise", timings, context):
            chunks = await self.reranker.precise_rerank(ctx, query, chunks, top_n=self.stage2_top_n)
        if self.mmr is not None and len(chunks) > 1:
            with stage("mmr", timings, {**context, "lambda": self.mmr.lambda_}):
                vectors = await self._embeddings(chunks)
                chunks = mmr_rerank(chunks, [c.score for c in chunks], vectors, self.mmr.lambda_, self.mmr.top_k)
        return list(chunks[:top_k])

    def rerank_sync(self, ctx: RequestContext, query: str, refs: Sequence[ChunkRef], top_k: int = 10) -> list[Chunk]:
        """:meth:`rerank` for code without an event loop (runs one)."""
        return asyncio.run(self.rerank(ctx, query, refs, top_k))

    async def _embeddings(self, chunks: Sequence[Chunk]) -> Any:
        """The chunks' own ``metadata['embedding']`` when all carry one, else the embedder's vectors."""
        if all("embedding" in c.metadata for c in chunks):
            return [c.metadata["embedding"] for c in chunks]
        if self.embedder is None:
            lacking = sum("embedding" not in c.metadata for c in chunks)
            raise RerankerError("mmr", f"MMR needs embeddings: {lacking} of {len(chunks)} chunks have no "
                                "metadata['embedding'] and the pipeline has no embedder", {"stage": "mmr"})
        return await asyncio.to_thread(self.embedder.embed_documents, [c.text for c in chunks])


def _with_scores(chunks: Sequence[Chunk], refs: Sequence[ChunkRef]) -> list[Chunk]:
    """The hydrated chunks carrying their references' stage-1 scores (what an early exit returns)."""
    score = {r.id: r.score for r in refs}
    for chunk in chunks:
        chunk.score = float(score.get(chunk.id, chunk.score))
    return list(chunks)
