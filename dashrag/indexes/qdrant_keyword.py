"""QdrantKeywordIndex: a BM25 node's term weights as Qdrant sparse vectors (embedded on Qdrant Edge, or a server).

One point per chunk (id = chunk id, the payload of every dashrag Qdrant collection:
``chunk_id``, ``text``, ``source_id``, ``categories``), whose sparse vector ``bm25``
holds the chunk's BM25 weights indexed by the node's term ids (``keyword_base.py``). A
query is the sparse vector of its term counts; Qdrant's sparse dot product is then the
in-process BM25 score (no ``idf`` modifier: the weights already hold the idf, computed by
the project's own scoring, so every BM25 variant and parameter carries over). Sparse
search in Qdrant is exact. Connection, records, filters and errors are
``qdrant_engine.py``'s, shared with the dense index.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.errors import EngineError
from dashrag.indexes.base import Hits, IndexIdentity
from dashrag.indexes.engine import UPLOAD_BATCH, payloads_of
from dashrag.indexes.keyword_base import KeywordIndex, QueryTerms, document_weights, ranked_hits
from dashrag.indexes.qdrant_engine import QdrantConnectionParams, QdrantEngine
from dashrag.indexes.qdrant_store import Layout
from dashrag.scoring.bm25 import BM25Weights

SPARSE_VECTOR = "bm25"
TIE_MARGIN = 16  # extra points asked for, so ties at the k-th place are ordered by chunk id as in-process


class QdrantKeywordParams(QdrantConnectionParams):
    pass


@register(kind="keyword_index", icon="Database", category="index",
          en=("Qdrant sparse vectors", "BM25 term weights as sparse vectors in a Qdrant collection (exact): "
              "embedded (Qdrant Edge) or a server."),
          es=("Vectores dispersos de Qdrant",
              "Pesos BM25 de los términos como vectores dispersos en una colección de Qdrant (exacta): "
              "embebida (Qdrant Edge) o un servidor."),
          representation="Qdrant BM25 {collection}")
class QdrantKeywordIndex(QdrantEngine[QdrantKeywordParams], KeywordIndex[QdrantKeywordParams]):
    def add(self, weights: BM25Weights, identity: IndexIdentity) -> None:
        super().add(document_weights(weights), identity)

    def check_layout(self, identity: IndexIdentity) -> None:
        with self.engine_errors("reading the collection's configuration"):
            stored = self.store.stored_vectors(self.name)
        if SPARSE_VECTOR not in stored.sparse:
            raise EngineError(f"{self.where()} has no sparse vector {SPARSE_VECTOR!r} (not a dashrag keyword "
                              "collection)")

    def layout(self, dimension: int, metric: str) -> Layout:
        return Layout(sparse=SPARSE_VECTOR, payload_indexes=self.payload_indexes())

    def upload(self, rows: np.ndarray, weights: sp.csr_matrix) -> None:
        chunks = self.require_infra().chunks
        with self.engine_errors("uploading term weights"):
            for start in range(0, len(rows), UPLOAD_BATCH * 8):
                part = rows[start:start + UPLOAD_BATCH * 8]
                self.store.upsert_sparse(self.name, SPARSE_VECTOR, chunks.ids[part].tolist(),
                                         weights[start:start + len(part)], payloads_of(chunks, part.tolist()))

    def search(self, queries: list[QueryTerms], k: int, restriction: Restriction | None,
               chunk_ids: list[int] | None = None) -> list[Hits]:
        chunks = self.require_infra().chunks
        asked = [i for i, (terms, _) in enumerate(queries) if len(terms)]  # a query with no known term finds nothing
        sparse = [(np.asarray(queries[i][0]).tolist(), np.asarray(queries[i][1], dtype=np.float64).tolist())
                  for i in asked]
        with self.engine_errors("searching"):
            answers = self.store.search_sparse(self.name, SPARSE_VECTOR, sparse, k + TIE_MARGIN,
                                               self._filter(restriction, chunk_ids))
        hits: list[Hits] = [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))] * len(queries)
        for i, found in zip(asked, answers):
            ids = [point for point, _ in found]
            hits[i] = ranked_hits(ids, [score for _, score in found], chunks.rows_of(ids), k)
        return hits
