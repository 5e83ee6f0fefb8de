"""DenseEmbeddingRetriever: exact nearest neighbours of the query's embedding among the chunks'.

Search is exact: one float32 matrix product of the query vectors against the
chunk matrix, then partial top-k selection with a restriction applied as a mask
before it. The selection is ``top_k_rows`` (shared by every leaf: same order,
same tie rule), which sorts only the rows at or above the k-th best score, so a
100,000-row search stays as fast as bare numpy (bench/bench_dense.py). A batch of queries is embedded in
one call and scored by one product per block of queries.

Metrics (``similarity``, a pure function):

* ``dot``: the raw inner product;
* ``cosine``: the inner product of unit vectors. The chunk matrix is checked for
  unit length once, when it is fitted: vectors from a model that normalises
  (the default) are used as they are; otherwise the scores are divided by the
  stored chunk norms (the matrix itself is never rewritten);
* ``euclidean``: the negated distance (higher is better), from
  ``|q|² + |d|² − 2 q·d`` with the stored norms.

The chunk vectors come from the embedding cache (``embeddings.cache``), so
dense nodes over the same model and chunks embed once. A saved folder holds
``vectors.npy`` and ``norms.npy``; loading memory-maps the vectors and never
calls the model for documents (only queries are embedded at query time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Sequence

import numpy as np
from pydantic import Field

from dashrag.core.params import ComponentParams, ComponentSpec, component_field, spec
from dashrag.core.persistence import atomic_write_json, load_array, load_json, save_array
from dashrag.core.ranking import by_distance, top_k_rows
from dashrag.core.registry import register
from dashrag.core.retriever import Result, UnitRetriever, check_query
from dashrag.documents.model import ScoredChunk
from dashrag.embeddings.base import EmbeddingModel
from dashrag.embeddings.cache import document_vectors
from dashrag.errors import PersistenceError, RetrievalError

Metric = Literal["cosine", "dot", "euclidean"]
UNIT_TOLERANCE = 1e-4  # |norm - 1| below this for every row: the matrix is treated as unit length


def is_unit_length(norms: np.ndarray) -> bool:
    return bool(norms.size == 0 or np.max(np.abs(norms - 1.0)) <= UNIT_TOLERANCE)


def similarity(queries: np.ndarray, matrix: np.ndarray, norms: np.ndarray, metric: str,
               unit_length: bool) -> np.ndarray:
    """(n_queries, n_rows) scores, higher is better, of ``queries`` against ``matrix`` rows.

    ``norms`` are the rows' L2 norms; ``unit_length`` says they are all 1 (then
    cosine is the plain product and nothing is divided).
    """
    if metric == "euclidean":
        return euclidean_from_ranking(euclidean_ranking(queries, matrix, norms), squared_lengths(queries))
    queries = np.asarray(queries, dtype=np.float32)
    if metric == "dot":
        return queries @ matrix.T
    if metric == "cosine":
        q_norms = np.linalg.norm(queries, axis=1, keepdims=True)
        products = (queries / np.where(q_norms > 0, q_norms, 1)).astype(np.float32) @ matrix.T
        if not unit_length:
            products *= np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1), 0).astype(np.float32)
        return products
    raise ValueError(f"unknown similarity metric {metric!r}")


def squared_lengths(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return np.einsum("ij,ij->i", vectors, vectors)


def euclidean_ranking(queries: np.ndarray, matrix: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """``2 q·d − |d|²``: per query, the same order as −distance (``|q|²`` is constant along a row),
    one product and one subtraction, no square root over the whole matrix."""
    ranking = np.asarray(queries, dtype=np.float32) @ matrix.T
    ranking *= 2
    ranking -= (norms.astype(np.float32) ** 2)[None, :]
    return ranking


def euclidean_from_ranking(ranking: np.ndarray, query_squared_lengths: np.ndarray) -> np.ndarray:
    """−distance from ``euclidean_ranking`` values: −sqrt(|q|² − (2 q·d − |d|²)), clipped at 0."""
    squared = np.asarray(query_squared_lengths, dtype=np.float32).reshape(-1, *([1] * (ranking.ndim - 1))) - ranking
    return -np.sqrt(np.maximum(squared, 0))


def distance_from_similarity(scores: np.ndarray, metric: str) -> np.ndarray:
    """cosine → 1 − cos; dot → −dot; euclidean → the distance itself."""
    if metric == "cosine":
        return 1.0 - scores
    return -scores


class DenseParams(ComponentParams):
    top_k: int = Field(5, ge=1, description="How many chunks to return.")
    similarity_metric: Metric = Field("cosine", description=(
        "cosine: angle between vectors; dot: inner product (equals cosine for unit vectors); "
        "euclidean: straight-line distance."))
    embedding: ComponentSpec = component_field("embedding", spec("MiniLMEmbedding"),
                                               description="The model that embeds chunks and queries.")

    ALIASES = {"embedding_model": "embedding"}  # DashAI's name for the field


@register(
    kind="retriever",
    icon="Brain",
    category="semantic",
    en=("Dense embeddings", "Ranks chunks by the similarity of their embedding to the query's (exact search)."),
    es=(
        "Embeddings densos",
        "Ordena fragmentos por la similitud de su embedding con el de la consulta (búsqueda exacta).",
    ),
    representation={
        "en": "Dense {similarity_metric} top {top_k} ({embedding})",
        "es": "Denso {similarity_metric}, mejores {top_k} ({embedding})",
    },
)
class DenseEmbeddingRetriever(UnitRetriever[DenseParams]):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._vectors: np.ndarray | None = None
        self._norms: np.ndarray | None = None
        self._unit_length = False

    @property
    def embedding(self) -> EmbeddingModel:
        return self.nested["embedding"]

    # -- fitting and state --------------------------------------------------
    def _fit(self) -> None:
        infra = self.require_infra()
        self._use_vectors(document_vectors(self.embedding, infra.chunks, infra.env_path))

    def _use_vectors(self, vectors: np.ndarray, norms: np.ndarray | None = None) -> None:
        vectors = np.asarray(vectors)
        if vectors.dtype != np.float32 or vectors.ndim != 2:
            raise RetrievalError(
                f"{self.component_name}: chunk vectors must be a 2-d float32 matrix, "
                f"got {vectors.dtype} {vectors.shape}"
            )
        if vectors.shape[0] != len(self.require_infra().chunks):
            raise RetrievalError(
                f"{self.component_name}: {vectors.shape[0]} vectors for {len(self.require_infra().chunks)} chunks"
            )
        self._vectors = vectors
        self._norms = np.linalg.norm(vectors, axis=1).astype(np.float32) if norms is None else norms
        self._unit_length = is_unit_length(self._norms)

    def _save(self, folder: Path) -> None:
        save_array(folder / "vectors.npy", self._matrix())
        save_array(folder / "norms.npy", self._vector_norms())
        atomic_write_json(
            folder / "dense.json",
            {"dimension": int(self._matrix().shape[1]), "embedding_cache_key": self.embedding.cache_key()},
        )

    def _load(self, folder: Path) -> None:
        state = load_json(folder / "dense.json")
        vectors = np.asarray(load_array(folder / "vectors.npy", mmap=True))
        norms = load_array(folder / "norms.npy")
        if vectors.ndim != 2 or norms.shape != (vectors.shape[0],) or vectors.shape[1] != state.get("dimension"):
            raise PersistenceError(
                f"{folder}: vectors {vectors.shape}, norms {norms.shape} and the recorded "
                f"dimension {state.get('dimension')} do not match"
            )
        try:
            self._use_vectors(vectors, norms)
        except RetrievalError as exc:
            raise PersistenceError(f"{folder}: {exc}") from None

    def _matrix(self) -> np.ndarray:
        if self._vectors is None:
            raise RetrievalError(f"{self.component_name}: not fitted (call init_model, or use dashrag.build / load)")
        return self._vectors

    def _vector_norms(self) -> np.ndarray:
        """The chunk vectors' lengths (set with the vectors, so fitted whenever ``_matrix`` is)."""
        self._matrix()
        assert self._norms is not None
        return self._norms

    # -- vectors, for this node and for others (MMR) ---------------------------
    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        vectors = self.embedding.embed_queries(queries)
        if vectors.shape[1] != self._matrix().shape[1]:
            raise RetrievalError(
                f"{self.component_name}: the query vectors have {vectors.shape[1]} dimensions but the chunk "
                f"vectors {self._matrix().shape[1]} (the saved vectors come from another model)"
            )
        return vectors

    @property
    def vectors(self) -> np.ndarray:
        """The (n_chunks, d) float32 chunk matrix, rows in chunk-id order (memory-mapped after load)."""
        return self._matrix()

    @property
    def unit_length(self) -> bool:
        """Every chunk vector has length 1 (within 1e-4): cosine is then the plain product."""
        return self._unit_length

    def vectors_for(self, chunk_ids: Sequence[int]) -> np.ndarray:
        """The stored vectors of these chunks (rows in the given order); unknown ids raise UnknownChunkError."""
        return np.asarray(self._matrix()[self.require_infra().chunks.rows_of(chunk_ids)])

    def score_vectors(self, query_vectors: np.ndarray) -> np.ndarray:
        """(n_queries, n_chunks) scores of precomputed query vectors under this node's metric."""
        return similarity(query_vectors, self._matrix(), self._vector_norms(), self.params.similarity_metric,
                          self._unit_length)

    def retrieve_vectors(self, query_vectors: np.ndarray, **kwargs: Any) -> list[Sequence[ScoredChunk]]:
        """Rank by precomputed query vectors: the path ``retrieve_batch`` takes once it has embedded the queries."""
        return [hits for hits, _, _ in self._rank(np.asarray(query_vectors, dtype=np.float32), kwargs)]

    # -- the retriever contract ------------------------------------------------
    def _score_block(self, queries: list[str]) -> np.ndarray:
        return self.score_vectors(self.embed_queries(queries))

    def _retrieve_batch(self, queries: list[str], **kwargs: Any) -> list[Result]:
        return self._rank(self.embed_queries(queries), kwargs)

    def _rank(self, query_vectors: np.ndarray, kwargs: dict[str, Any]) -> list[Result]:
        chunks = self.require_infra().chunks
        k, allowed = self.top_k(kwargs), self._allowed(kwargs)
        euclidean = self.params.similarity_metric == "euclidean"
        results: list[Result] = []
        for start in range(0, len(query_vectors), self.query_block):
            block = query_vectors[start : start + self.query_block]
            # euclidean: select on a cheaper score of the same order, take the square root of the k kept only
            ranking = (euclidean_ranking(block, self._matrix(), self._vector_norms()) if euclidean
                       else self.score_vectors(block))
            lengths = squared_lengths(block) if euclidean else None
            for i, row in enumerate(ranking):
                rows = top_k_rows(row, k, allowed)
                scores = euclidean_from_ranking(row[rows], lengths[i]) if lengths is not None else row[rows]
                results.append(
                    (
                        [ScoredChunk(chunks.chunks[r], float(x), self.component_name) for r, x in zip(rows, scores)],
                        [],
                        None,
                    )
                )
        return results

    def to_distance(self, scores: np.ndarray) -> np.ndarray:
        return distance_from_similarity(scores, self.params.similarity_metric)

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        query = check_query(query)
        rows = self.require_infra().chunks.rows_of(chunk_ids)
        matrix = self._matrix()
        scores = similarity(
            self.embed_queries([query]),
            matrix[rows],
            self._vector_norms()[rows],
            self.params.similarity_metric,
            self._unit_length,
        )[0]
        distances = self.to_distance(scores)
        return by_distance(chunk_ids, rows, distances)
