"""MMRRerankerRetriever: maximal marginal relevance over one child's candidates.

The child proposes ``fetch_k`` candidates; MMR then picks ``top_k`` of them
greedily, each time the candidate that is most relevant to the query and least
similar to what is already picked (Carbonell & Goldstein, 1998)::

    mmr(c) = λ · sim(c, query) − (1 − λ) · max_{s ∈ picked} sim(c, s)

with cosine similarity for both terms, so λ = 1 is plain relevance order and
λ = 0 maximal diversity. Ties go to the candidate the child ranked higher. The
score of each pick is its MMR value, which never increases along the picks
(the max over nothing picked is taken as −1, see ``mmr_select``).

Vectors come from, in order: the child itself when it holds them (a
``DenseEmbeddingRetriever``: its chunk vectors and its query embedding); a dense
node inside the child whose embedding has the same cache key as this node's
own ``embedding`` (a hybrid's dense half); otherwise this node's ``embedding``
embeds the query and the candidates at query time. So MMR works over any child,
composites and keyword retrievers included. The trace's ``selection`` names the
source and lists every pick with its relevance and max-similarity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from pydantic import Field

from dashrag.core.params import ComponentParams, ComponentSpec, component_field, components_field, less_or_equal, spec
from dashrag.core.registry import register
from dashrag.core.retriever import CompositeRetriever, Result, Retriever, check_query
from dashrag.documents.model import ScoredChunk
from dashrag.embeddings.base import EmbeddingModel
from dashrag.embeddings.overflow import unit_rows
from dashrag.retrievers.dense import DenseEmbeddingRetriever

NO_REDUNDANCY = -1.0  # the max similarity to nothing: the least a cosine can be


@dataclass(frozen=True)
class Pick:
    index: int  # into the candidate list
    score: float  # the MMR value when picked
    relevance: float
    max_similarity: float | None  # to the candidates picked before; None for the first pick


def mmr_select(relevance: np.ndarray, similarity: np.ndarray, lambda_mult: float, k: int) -> list[Pick]:
    """Greedy MMR over ``n`` candidates: ``relevance`` (n,), ``similarity`` (n, n), cosines; ties → lower index.

    Before the first pick the max similarity is taken as −1 (the lowest cosine),
    not 0: with 0, a candidate whose similarity to the first pick is negative
    would score *higher* after it than the first pick did. With −1 every
    candidate's value can only fall as picks accumulate, so the values are
    non-increasing along the picks and serve as scores. The first pick is the
    most relevant candidate whatever λ > 0 (for λ = 0, the child's first).
    """
    relevance = np.asarray(relevance, dtype=np.float64)
    similarity = np.asarray(similarity, dtype=np.float64)
    n = relevance.shape[0]
    max_similarity = np.full(n, NO_REDUNDANCY)
    available = np.ones(n, dtype=bool)
    picks: list[Pick] = []
    for _ in range(min(k, n)):
        values = np.where(available, lambda_mult * relevance - (1 - lambda_mult) * max_similarity, -np.inf)
        i = int(np.argmax(values))  # the first maximum: the lowest index wins a tie
        picks.append(Pick(i, float(values[i]), float(relevance[i]), float(max_similarity[i]) if picks else None))
        available[i] = False
        max_similarity = np.maximum(max_similarity, similarity[i])
    return picks


class MMRParams(ComponentParams):
    children: list[ComponentSpec] = components_field(
        "retriever", [spec("DenseEmbeddingRetriever")], min_length=1, max_length=1,
        description="The one retriever whose candidates MMR re-orders (any retriever, composites included).")
    lambda_mult: float = Field(0.5, ge=0, le=1, description="1: relevance only; 0: diversity only.")
    top_k: int = Field(5, ge=1, description="How many chunks to return.")
    fetch_k: int = Field(20, ge=1, description="How many candidates to ask the child for.")
    embedding: ComponentSpec = component_field(
        "embedding", spec("MiniLMEmbedding"),
        description="Embeds query and candidates when the child holds no vectors of its own.")

    RULES = (less_or_equal("top_k", "fetch_k"),)


@register(
    kind="retriever",
    icon="Shuffle",
    category="rerank",
    en=("MMR reranker", "Re-orders a retriever's candidates to be relevant yet diverse (maximal marginal relevance)."),
    es=("Reordenador MMR", "Reordena los candidatos de un recuperador para que sean relevantes y diversos (MMR)."),
    representation="MMR λ={lambda_mult} top {top_k} of {fetch_k}",
    operation="Picks top_k of the child's fetch_k candidates, trading relevance against similarity to earlier picks.",
)
class MMRRerankerRetriever(CompositeRetriever[MMRParams]):
    SCHEMA = MMRParams

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._source: tuple[DenseEmbeddingRetriever | None, str] | None = None

    @property
    def child(self) -> Retriever:
        return self.get_children()[0]

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

    def _query_vectors(self, queries: list[str]) -> np.ndarray:
        dense, _ = self.vector_source()
        embedder: Any = dense if dense is not None else self.nested["embedding"]
        return unit_rows(embedder.embed_queries(queries))

    def _chunk_vectors(self, chunk_ids: Sequence[int]) -> np.ndarray:
        dense, _ = self.vector_source()
        if dense is not None:
            return unit_rows(dense.vectors_for(chunk_ids))
        chunks = self.require_infra().chunks
        rows = chunks.rows_of(chunk_ids)  # unknown ids raise here
        embedding: EmbeddingModel = self.nested["embedding"]
        return unit_rows(embedding.embed_documents([chunks.chunks[r].text for r in rows]))

    # -- retrieval --------------------------------------------------------------
    def _retrieve(self, query: str, **kwargs: Any) -> Result:
        return self._retrieve_batch([query], **kwargs)[0]

    def _retrieve_batch(self, queries: list[str], **kwargs: Any) -> list[Result]:
        k = int(kwargs.get("top_k") or self.params.top_k)
        fetch = max(self.params.fetch_k, k)
        answers = self.child.retrieve_batch(queries, **{**kwargs, "top_k": fetch})
        query_vectors = self._query_vectors(queries)
        candidate_ids = sorted({c.id for chunks, _ in answers for c in chunks})
        vectors = dict(zip(candidate_ids, self._chunk_vectors(candidate_ids))) if candidate_ids else {}
        return [
            self._select(q_vector, chunks, trace, vectors, k)
            for q_vector, (chunks, trace) in zip(query_vectors, answers)
        ]

    def _select(
        self,
        query_vector: np.ndarray,
        candidates: list[ScoredChunk],
        child_trace: dict,
        vectors: dict[int, np.ndarray],
        k: int,
    ) -> Result:
        matrix = (
            np.stack([vectors[c.id] for c in candidates])
            if candidates
            else np.empty((0, len(query_vector)), np.float32)
        )
        picks = mmr_select(matrix @ query_vector, matrix @ matrix.T, self.params.lambda_mult, k)
        chosen = [
            candidates[p.index].rescored(
                p.score,
                self.component_name,
                relevance=p.relevance,
                max_similarity=p.max_similarity,
                child_rank=p.index + 1,
                child_score=candidates[p.index].score,
            )
            for p in picks
        ]
        _, how = self.vector_source()
        selection = {
            "summary": f"MMR λ={self.params.lambda_mult}: picked {len(picks)} of {len(candidates)} candidates",
            "lambda_mult": self.params.lambda_mult,
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
        return chosen, [child_trace], selection

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """MMR over exactly these chunks, candidates in relevance order; distance = −MMR value (pick order)."""
        query = check_query(query)
        ids = [int(c) for c in chunk_ids]
        if not ids:
            return []
        matrix = self._chunk_vectors(ids)
        relevance = matrix @ self._query_vectors([query])[0]
        order = np.lexsort((np.asarray(ids), -relevance))  # relevance first, then chunk id
        matrix, ids = matrix[order], [ids[i] for i in order]
        picks = mmr_select(relevance[order], matrix @ matrix.T, self.params.lambda_mult, len(ids))
        return [(ids[p.index], -p.score) for p in picks]
