"""The rag-reranker's MMR: ``MMRConfig`` and ``mmr_rerank`` over candidates, as the reference prints them.

``mmr_rerank(candidates, relevance_scores, embeddings, lambda_=0.7, top_k=10)`` picks greedily
(Carbonell & Goldstein, 1998): first the most relevant, then the candidate maximising
``λ · rel − (1 − λ) · max cosine to the picked``; candidates are a set (the order is MMR's own),
``top_k`` is capped at their number, and the candidates come back unmodified (MMR writes no score). The
picking is :func:`dashrag.retrievers.mmr.cosine_mmr`, the one MMR of the rerank cascade and the MMR retriever.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from dashrag.errors import ConfigError, RetrievalError
from dashrag.retrievers.mmr import cosine_mmr
from dashrag.retrievers.rerank_cascade import DEFAULT_MMR_LAMBDA

T = TypeVar("T")


@dataclass(frozen=True)
class MMRConfig:
    """The MMR pass: λ (1: relevance only, 0: diversity after the first pick) and how many to pick."""

    lambda_: float = DEFAULT_MMR_LAMBDA
    top_k: int = 10

    def __post_init__(self) -> None:
        if isinstance(self.lambda_, bool) or not isinstance(self.lambda_, (int, float)) or not 0 <= self.lambda_ <= 1:
            raise ConfigError(f"mmr.lambda_: expected a number in [0, 1], got {self.lambda_!r}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise ConfigError(f"mmr.top_k: expected a positive integer, got {self.top_k!r}")


def mmr_rerank(candidates: Sequence[T], relevance_scores: Sequence[float], embeddings: Sequence[Sequence[float]],
               lambda_: float = DEFAULT_MMR_LAMBDA, top_k: int = 10) -> list[T]:
    """``min(top_k, len(candidates))`` of ``candidates`` in MMR order, unmodified. ``relevance_scores`` and
    ``embeddings`` (rows of one dimension) are one per candidate; anything else is a RetrievalError."""
    if len(relevance_scores) != len(candidates):
        raise RetrievalError(f"mmr_rerank: {len(relevance_scores)} relevance scores for {len(candidates)} candidates")
    if not candidates:
        return []
    try:
        vectors = np.asarray(embeddings, dtype=np.float64)
    except ValueError:
        raise RetrievalError("mmr_rerank: the embeddings are not rows of one dimension") from None
    picks = cosine_mmr(np.asarray(relevance_scores, dtype=np.float64), vectors, top_k, lambda_)
    return [candidates[p.index] for p in picks]
