"""Reranking candidates the caller already has: the rag-reranker's Python surface (``RerankPipeline`` with its
async ``arerank``, ``MMRConfig``, ``mmr_rerank``) and what ``dashrag rerank`` reads and writes
(docs/reranking.md). Thin names over the rerank cascade's parts and ``mmr_select``
(dashrag/retrievers/rerank_cascade.py, dashrag/retrievers/mmr.py)."""

from dashrag.rerank.candidates import Candidate, RankedCandidate, RerankRequest, RerankResult, read_requests
from dashrag.rerank.pipeline import MMRConfig, RerankPipeline, TextReranker, rerank_input
from dashrag.retrievers.mmr import Pick, mmr_rerank, mmr_select

__all__ = ["Candidate", "MMRConfig", "Pick", "RankedCandidate", "RerankPipeline", "RerankRequest", "RerankResult",
           "TextReranker", "mmr_rerank", "mmr_select", "read_requests", "rerank_input"]
