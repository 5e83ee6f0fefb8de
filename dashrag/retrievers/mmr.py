"""MMRRerankerRetriever: maximal marginal relevance over one child's candidates.

The child proposes its candidates (as many as its own ``top_k``, as in DashAI, or
``fetch_k`` when that is set); when they already fit ``top_k`` they are returned as
they are, otherwise MMR picks ``top_k`` of them greedily (Carbonell & Goldstein,
1998), as the reference does:

* the first pick is the most relevant candidate, whatever λ;
* each later pick maximises ``λ · relevance(c) − (1 − λ) · max_{s ∈ picked} sim(c, s)``;
* *relevance* is the child's own score of the candidate (in the rerank cascade, the
  precise stage's score), never a cosine recomputed against the query; *sim* is the
  cosine between candidate vectors;
* λ = 1 returns the input order exactly; λ = 0, after the most relevant, always the
  candidate least similar to those picked;
* MMR re-orders, it does not re-score: every chunk keeps its score (and source), and
  its MMR value goes into the provenance (``mmr_score``) and the trace;
* with no more candidates than ``top_k`` (so with one or none) MMR does not run;
* ``score_chunks`` is the child's, as in DashAI (MMR orders a set, it does not score a chunk).

Vectors come from, in order: the child itself when it holds them (a
``DenseEmbeddingRetriever``); a dense node inside the child whose embedding has the
same cache key as this node's own ``embedding`` (a hybrid's dense half); otherwise
this node's ``embedding`` embeds the candidates at query time. So MMR works over any
child, composites and keyword retrievers included. The trace's ``selection`` names
the source and lists every pick with its relevance and max-similarity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from pydantic import Field

from dashrag.core.ask import Ask
from dashrag.core.params import (
    ComponentParams,
    ComponentSpec,
    component_field,
    components_field,
    less_or_equal,
    spec,
    top_k_field,
)
from dashrag.core.registry import register
from dashrag.core.retriever import Answer, Result, SingleChildRetriever, check_query
from dashrag.documents.model import ScoredChunk
from dashrag.embeddings.base import EmbeddingModel
from dashrag.embeddings.overflow import unit_rows
from dashrag.errors import RetrievalError
from dashrag.retrievers.dense import DenseEmbeddingRetriever


@dataclass(frozen=True)
class Pick:
    index: int  # into the candidate list
    score: float  # the MMR value when picked
    relevance: float
    max_similarity: float | None  # to the candidates picked before; None for the first pick


def mmr_select(relevance: np.ndarray, similarity: np.ndarray, lambda_mult: float, k: int) -> list[Pick]:
    """Greedy MMR over ``n`` candidates given in their input order: ``relevance`` (n,), ``similarity`` (n, n).

    The first pick is the most relevant (ties → lower index) and its MMR value is ``λ · relevance``
    (nothing picked yet to be similar to); every later pick maximises the MMR value (ties → lower
    index). λ = 1 returns the ``k`` most relevant in relevance order (ties in input order), as the
    rag-reranker's ``mmr_select`` does even for input that is not sorted. Shapes that do not fit, or λ
    outside [0, 1], raise RetrievalError.
    """
    relevance = np.asarray(relevance, dtype=np.float64)
    similarity = np.asarray(similarity, dtype=np.float64)
    n = relevance.shape[0] if relevance.ndim == 1 else -1
    if relevance.ndim != 1 or similarity.shape != (n, n):
        raise RetrievalError(f"mmr_select: relevance must be (n,) and similarity (n, n); got {relevance.shape} "
                             f"and {similarity.shape}")
    if not 0.0 <= lambda_mult <= 1.0:
        raise RetrievalError(f"mmr_select: lambda_mult must lie in [0, 1], got {lambda_mult}")
    count = max(0, min(int(k), n))
    if lambda_mult == 1.0:  # relevance only: relevance order (the input order for input sorted by relevance)
        return [Pick(int(i), float(relevance[i]), float(relevance[i]), None)
                for i in np.argsort(-relevance, kind="stable")[:count]]
    picks: list[Pick] = []
    if count == 0:
        return picks
    first = int(np.argmax(relevance))
    picks.append(Pick(first, float(lambda_mult * relevance[first]), float(relevance[first]), None))
    available = np.ones(n, dtype=bool)
    available[first] = False
    max_similarity = similarity[first].copy()
    for _ in range(count - 1):
        values = np.where(available, lambda_mult * relevance - (1 - lambda_mult) * max_similarity, -np.inf)
        i = int(np.argmax(values))  # the first maximum: the lowest index wins a tie
        picks.append(Pick(i, float(values[i]), float(relevance[i]), float(max_similarity[i])))
        available[i] = False
        max_similarity = np.maximum(max_similarity, similarity[i])
    return picks


def cosine_mmr(relevance: Sequence[float] | np.ndarray, vectors: np.ndarray, top_k: int,
               lambda_mult: float) -> list[Pick]:
    """MMR over candidates given as their relevance (n,) and their vectors (n, d): the similarity is the cosine
    between the vectors (rows made unit length), the picks :func:`mmr_select`'s. What the rerank cascade and
    the staged pipeline (:mod:`dashrag.rerank.staged`) run, and the
    rag-reranker's ``mmr_rerank`` (:mod:`dashrag.rerank.mmr`) is built on; a row of zeros is similar to nothing."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(relevance):
        raise RetrievalError(f"cosine_mmr: vectors must be (n, d) for {len(relevance)} candidates; got {vectors.shape}")
    unit = unit_rows(vectors)
    return mmr_select(np.asarray(relevance, dtype=np.float64), unit @ unit.T, lambda_mult, top_k)


def reorder(candidates: Sequence[ScoredChunk], picks: Sequence[Pick], source: str) -> list[ScoredChunk]:
    """The picked candidates in pick order, each keeping its score; the MMR value goes into the provenance."""
    return [candidates[p.index].rescored(candidates[p.index].score, candidates[p.index].source,
                                         mmr_score=p.score, mmr_rank=rank, mmr_by=source,
                                         mmr_relevance=p.relevance, mmr_max_similarity=p.max_similarity,
                                         input_rank=p.index + 1)
            for rank, p in enumerate(picks, start=1)]


class MMRParams(ComponentParams):
    children: list[ComponentSpec] = components_field(
        "retriever", [spec("DenseEmbeddingRetriever")], min_length=1, max_length=1,
        description="The one retriever whose candidates MMR re-orders (any retriever, composites included).")
    lambda_mult: float = Field(0.5, ge=0, le=1, description="1: relevance only; 0: diversity only.")
    top_k: int = top_k_field(5)
    fetch_k: int | None = Field(None, ge=1, le=10_000, description=(
        "How many candidates to ask the child for; None: as many as the child's own top_k (DashAI's way)."))
    embedding: ComponentSpec = component_field(
        "embedding", spec("MiniLMEmbedding"),
        description="Embeds query and candidates when the child holds no vectors of its own.")

    RULES = (less_or_equal("top_k", "fetch_k"),)
    ALIASES = {"mmr_lambda": "lambda_mult"}  # DashAI's name


@register(
    kind="retriever",
    icon="Shuffle",
    category="rerank",
    en=("MMR reranker", "Re-orders a retriever's candidates to be relevant yet diverse (maximal marginal relevance)."),
    es=("Reordenador MMR", "Reordena los candidatos de un recuperador para que sean relevantes y diversos (MMR)."),
    representation={"en": "MMR λ={lambda_mult} top {top_k}", "es": "MMR λ={lambda_mult}, {top_k} mejores"},
    operation="Picks top_k of the child's fetch_k candidates, trading relevance against similarity to earlier picks.",
)
class MMRRerankerRetriever(SingleChildRetriever[MMRParams]):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._source: tuple[DenseEmbeddingRetriever | None, str] | None = None

    def _fit(self) -> None:
        self._source = None  # the tree may have changed since the last look

    def _load(self, folder: Any) -> None:
        self._source = None

    # -- where vectors come from ------------------------------------------------
    def vector_source(self) -> tuple[DenseEmbeddingRetriever | None, str]:
        """(dense node whose vectors to use, or None to embed candidates; how it was chosen)."""
        if self._source is None:
            self._source = self._find_source()
        return self._source

    def _find_source(self) -> tuple[DenseEmbeddingRetriever | None, str]:
        if isinstance(self.child, DenseEmbeddingRetriever):
            return self.child, "the child's vectors"
        own_key = self.nested["embedding"].cache_key()
        for path, node in self.child.iter_nodes("children[0]"):
            if isinstance(node, DenseEmbeddingRetriever) and node.embedding.cache_key() == own_key:
                return node, f"vectors of {path} (same embedding)"
        return None, "candidates embedded with this node's embedding"

    def _chunk_vectors(self, chunk_ids: Sequence[int]) -> np.ndarray:
        dense, _ = self.vector_source()
        if dense is not None:
            return unit_rows(dense.vectors_for(chunk_ids))
        chunks = self.require_infra().chunks
        rows = chunks.rows_of(chunk_ids)  # unknown ids raise here
        embedding: EmbeddingModel = self.nested["embedding"]
        return unit_rows(embedding.embed_documents(chunks.texts_at(rows.tolist())))

    # -- retrieval --------------------------------------------------------------
    def _rescore(self, queries: list[str], answers: Sequence[Answer], ask: Ask) -> list[Result]:
        k = self.top_k(ask)
        candidate_ids = sorted({c.id for chunks, _ in answers if len(chunks) > k for c in chunks})
        vectors = dict(zip(candidate_ids, self._chunk_vectors(candidate_ids))) if candidate_ids else {}
        return [self._select(chunks, trace, vectors, k) for chunks, trace in answers]

    def _select(self, candidates: Sequence[ScoredChunk], child_trace: dict, vectors: dict[int, np.ndarray],
                k: int) -> Result:
        lam = self.params.lambda_mult
        if len(candidates) <= k:  # they all fit: nothing to choose between, MMR does not run (as DashAI)
            summary = f"MMR not run: {len(candidates)} candidate(s) fit top_k={k}"
            return candidates[:k], [child_trace], {"summary": summary, "lambda_mult": lam, "ran": False,
                                                    "candidates": len(candidates)}
        matrix = np.stack([vectors[c.id] for c in candidates])
        relevance = np.array([c.score for c in candidates], dtype=np.float64)  # the child's scores
        picks = mmr_select(relevance, matrix @ matrix.T, lam, k)
        _, how = self.vector_source()
        selection = {
            "summary": f"MMR λ={lam}: picked {len(picks)} of {len(candidates)} candidates",
            "lambda_mult": lam, "ran": True, "relevance": "the child's scores",
            "candidates": len(candidates),
            "vectors": how,
            "order": [
                {
                    "chunk_id": candidates[p.index].id,
                    "child_rank": p.index + 1,
                    "mmr": p.score,
                    "relevance": p.relevance,
                    "max_similarity": p.max_similarity,
                }
                for p in picks
            ],
        }
        return reorder(candidates, picks, self.component_name), [child_trace], selection

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """The child's distances, as in DashAI: MMR orders a set of candidates, it does not score a chunk."""
        return self.child.score_chunks(chunk_ids, check_query(query))
