"""Reranking candidates the caller already has (docs/reranking.md).

The rag-reranker's API, as its reference prints it: ``RerankPipeline`` (async ``rerank(ctx, query, refs,
top_k)``), the reranker SPI ``Reranker``, ``MMRConfig``, ``mmr_rerank``, the values ``ChunkRef`` / ``Chunk`` /
``RequestContext``, and the backends in :mod:`dashrag.rerank.backends`. Beside it, what ``dashrag
rerank-candidates`` runs: ``StagedRerankPipeline`` over candidates as JSON with two component stages
(:mod:`dashrag.rerank.staged`).
"""

from dashrag.rerank.candidates import Candidate, RankedCandidate, RerankRequest, RerankResult, read_requests
from dashrag.rerank.mmr import MMRConfig, mmr_rerank
from dashrag.rerank.pipeline import Embedder, RerankPipeline
from dashrag.rerank.spi import Reranker
from dashrag.rerank.staged import StagedMMR, StagedRerankPipeline, TextReranker, rerank_input
from dashrag.rerank.types import Chunk, ChunkRef, Hydrator, MemoryHydrator, RequestContext
from dashrag.retrievers.mmr import Pick, cosine_mmr, mmr_select

__all__ = ["Candidate", "Chunk", "ChunkRef", "Embedder", "Hydrator", "MMRConfig", "MemoryHydrator", "Pick",
           "RankedCandidate", "RequestContext", "RerankPipeline", "RerankRequest", "RerankResult", "Reranker",
           "StagedMMR", "StagedRerankPipeline", "TextReranker", "cosine_mmr", "mmr_rerank", "mmr_select",
           "read_requests", "rerank_input"]
