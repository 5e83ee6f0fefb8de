"""DenseEmbeddingRetriever: nearest neighbours of the query's embedding among the chunks'.

The node embeds chunks and queries; its nested ``index`` (kind ``vector_index``,
see ``dashrag/indexes/``) holds the chunk vectors and searches them. The default,
``InMemoryVectorIndex``, is exact: one float32 matrix product of the query vectors
against the chunk matrix, then partial top-k selection with a restriction applied as
a mask before it (``top_k_rows``, shared by every leaf), so a 100,000-row search
stays as fast as bare numpy (bench/bench_dense.py). ``QdrantVectorIndex`` and
``PgVectorIndex`` run the same search on an engine, exact or HNSW, the restriction
as a filter inside it (docs/engines.md). A batch of queries is embedded in one call.

Metrics (``similarity``, a pure function in ``indexes/similarity.py``):

* ``dot``: the raw inner product;
* ``cosine``: the inner product of unit vectors. The chunk matrix is checked for
  unit length once, when it is fitted: vectors from a model that normalises
  (the default) are used as they are; otherwise the scores are divided by the
  stored chunk norms (the matrix itself is never rewritten);
* ``euclidean``: the negated distance (higher is better), from
  ``|q|² + |d|² − 2 q·d`` with the stored norms;
* ``manhattan``: the negated sum of the coordinates' absolute differences (DashAI's
  ``cityblock`` / ``l1`` / ``manhattan``; its ``l2`` is ``euclidean``).

The chunk vectors come from the embedding cache (``embeddings.cache``), so
dense nodes over the same model and chunks embed once. A saved folder holds
``dense.json`` and what the index saves (``vectors.npy`` and ``norms.npy`` in-process,
a reference to the collection or table on an engine); loading never calls the model
for documents (only queries are embedded at query time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
from pydantic import Field

from dashrag.core.ask import Ask
from dashrag.core.params import ComponentParams, ComponentSpec, component_field, spec, top_k_field
from dashrag.core.persistence import atomic_write_json, load_json
from dashrag.core.ranking import by_distance
from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.core.retriever import Result, UnitRetriever, check_query
from dashrag.documents.changes import CorpusChange
from dashrag.documents.model import ScoredChunk
from dashrag.embeddings.base import EmbeddingModel
from dashrag.embeddings.cache import document_vectors, embed_with_progress
from dashrag.errors import PersistenceError, RetrievalError
from dashrag.indexes.base import IndexIdentity, VectorIndex
from dashrag.indexes.in_memory import InMemoryVectorIndex
from dashrag.indexes.similarity import (  # noqa: F401  (re-exported: the math used to live here)
    Metric,
    distance_from_similarity,
    euclidean_from_ranking,
    euclidean_ranking,
    is_unit_length,
    similarity,
    squared_lengths,
)


class DenseParams(ComponentParams):
    top_k: int = top_k_field(5)
    similarity_metric: Metric = Field("cosine", description=(
        "cosine: angle between vectors; dot: inner product (equals cosine for unit vectors); "
        "euclidean: straight-line distance; manhattan: the sum of the coordinates' differences."))
    embedding: ComponentSpec = component_field("embedding", spec("MiniLMEmbedding"),
                                               description="The model that embeds chunks and queries.")
    index: ComponentSpec = component_field("vector_index", spec("InMemoryVectorIndex"), description=(
        "Where the chunk vectors live and how they are searched: in this process (exact), "
        "on Qdrant or on PostgreSQL + pgvector (exact or HNSW)."))

    ALIASES = {"embedding_model": "embedding"}  # DashAI's name for the field
    VALUE_ALIASES = {"similarity_metric": (("l2", "euclidean"), ("l1", "manhattan"), ("cityblock", "manhattan"))}


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
        "es": "Denso (métrica {similarity_metric}), los {top_k} mejores ({embedding})",
    },
)
class DenseEmbeddingRetriever(UnitRetriever[DenseParams]):
    @property
    def embedding(self) -> EmbeddingModel:
        return self.nested["embedding"]

    @property
    def index(self) -> VectorIndex:
        return self.nested["index"]

    # -- fitting and state --------------------------------------------------
    def _identity(self, dimension: int) -> IndexIdentity:
        return IndexIdentity(self.require_infra().chunks.fingerprint, self.embedding.cache_key(),
                             self.params.similarity_metric, dimension)

    def _fit(self) -> None:
        infra = self.require_infra()
        def on_block(done: int, total: int | None) -> None:  # the build's progress moves by block, not at the end
            if done == 0:  # before the first block (nothing cached): the model loads now, and the build says so
                infra.progress("loading the embedding model")
                self.embedding.prepare()
            infra.progress("embedding chunks", done, total)

        vectors = np.asarray(document_vectors(self.embedding, infra.chunks, infra.env_path, on_block=on_block))
        if vectors.dtype != np.float32 or vectors.ndim != 2:
            raise RetrievalError(f"{self.component_name}: chunk vectors must be a 2-d float32 matrix, "
                                 f"got {vectors.dtype} {vectors.shape}")
        if vectors.shape[0] != len(infra.chunks):
            raise RetrievalError(f"{self.component_name}: {vectors.shape[0]} vectors for {len(infra.chunks)} chunks")
        self.index.add(vectors, self._identity(int(vectors.shape[1])))
        self._fitted = True

    def _update(self, change: CorpusChange) -> None:
        """The kept chunks' vectors as they are, and only the new chunks embedded (docs/updating.md)."""
        self._require_fitted()
        dimension = self.index.dimension
        new = (np.asarray(embed_with_progress(self.embedding, change.added_texts), dtype=np.float32)
               if change.added else np.zeros((0, dimension), dtype=np.float32))
        if new.shape[1] != dimension:
            raise RetrievalError(f"{self.component_name}: the model now gives {new.shape[1]}-dimensional vectors, "
                                 f"the tree holds {dimension}-dimensional ones")
        self.index.update_vectors(change, new, self._identity(dimension))

    def _save(self, folder: Path) -> None:
        self._require_fitted()
        self.index.save_into(folder)
        atomic_write_json(folder / "dense.json", {"dimension": self.index.dimension,
                                                  "embedding_cache_key": self.embedding.cache_key()})

    def _load(self, folder: Path) -> None:
        state = load_json(folder / "dense.json")
        dimension = state.get("dimension")
        if not isinstance(dimension, int) or dimension < 1:
            raise PersistenceError(f"{folder / 'dense.json'}: no valid 'dimension'")
        self.index.load_from(folder, self._identity(dimension))
        self._fitted = True

    def _require_fitted(self) -> None:
        if not getattr(self, "_fitted", False):
            raise RetrievalError(f"{self.component_name}: not fitted (call init_model, or use dashrag.build / load)")

    def _in_memory(self) -> InMemoryVectorIndex:
        self._require_fitted()
        if not isinstance(self.index, InMemoryVectorIndex):
            raise RetrievalError(f"{self.component_name}: scoring every chunk needs the in-process index, "
                                 f"this node searches {self.index.component_name}")
        return self.index

    # -- vectors, for this node and for others (MMR) ---------------------------
    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        self._require_fitted()
        vectors = self.embedding.embed_queries(queries)
        if vectors.shape[1] != self.index.dimension:
            raise RetrievalError(
                f"{self.component_name}: the query vectors have {vectors.shape[1]} dimensions but the chunk "
                f"vectors {self.index.dimension} (the saved vectors come from another model)")
        return vectors

    @property
    def vectors(self) -> np.ndarray:
        """The (n_chunks, d) float32 chunk matrix, rows in chunk-id order (in-process index only)."""
        return self._in_memory().matrix

    @property
    def unit_length(self) -> bool:
        """Every chunk vector has length 1 (within 1e-4): cosine is then the plain product."""
        return self._in_memory().unit_length

    def vectors_for(self, chunk_ids: Sequence[int]) -> np.ndarray:
        """The stored vectors of these chunks (rows in the given order); unknown ids raise UnknownChunkError."""
        self._require_fitted()
        return self.index.vectors_for(self.require_infra().chunks.rows_of(chunk_ids))

    def score_vectors(self, query_vectors: np.ndarray) -> np.ndarray:
        """(n_queries, n_chunks) scores of precomputed query vectors under this node's metric."""
        return self._in_memory().score_all(query_vectors)

    def retrieve_vectors(self, query_vectors: np.ndarray, *, top_k: int | None = None, filters: Any = None,
                         restriction: Restriction | None = None) -> list[Sequence[ScoredChunk]]:
        """Rank by precomputed query vectors: the path ``retrieve_batch`` takes once it has embedded the queries."""
        ask = Ask.of(top_k, filters, restriction)
        return [hits for hits, _, _ in self._rank(np.asarray(query_vectors, dtype=np.float32), ask)]

    # -- the retriever contract ------------------------------------------------
    def _score_block(self, queries: list[str]) -> np.ndarray:
        return self.score_vectors(self.embed_queries(queries))

    def _retrieve_batch(self, queries: list[str], ask: Ask) -> list[Result]:
        return self._rank(self.embed_queries(queries), ask)

    def _rank(self, query_vectors: np.ndarray, ask: Ask) -> list[Result]:
        self._require_fitted()
        chunks = self.require_infra().chunks
        found = self.index.search(query_vectors, self.top_k(ask), ask.restriction)
        return [([ScoredChunk(c, float(x), self.component_name)  # each answer's texts in one read of the store
                  for c, x in zip(chunks.chunks_at(rows.tolist()), scores.tolist())], [], None)
                for rows, scores in found]

    def to_distance(self, scores: np.ndarray) -> np.ndarray:
        return distance_from_similarity(scores, self.params.similarity_metric)

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        query = check_query(query)
        rows = self.require_infra().chunks.rows_of(chunk_ids)
        vectors = self.index.vectors_for(rows)
        norms = np.linalg.norm(vectors, axis=1).astype(np.float32)
        scores = similarity(self.embed_queries([query]), vectors, norms, self.params.similarity_metric,
                            is_unit_length(norms))[0]
        distances = self.to_distance(scores)
        return by_distance(chunk_ids, rows, distances)
