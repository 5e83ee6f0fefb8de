"""QdrantKeywordIndex: a BM25 node's term weights as Qdrant sparse vectors (embedded, or a server / cluster).

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

from typing import Any

import numpy as np
import scipy.sparse as sp

from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.errors import EngineError
from dashrag.indexes.base import Hits, IndexIdentity
from dashrag.indexes.engine import UPLOAD_BATCH, payload_of
from dashrag.indexes.keyword_base import KeywordIndex, QueryTerms, document_weights, ranked_hits
from dashrag.indexes.qdrant_engine import QdrantConnectionParams, QdrantEngine
from dashrag.scoring.bm25 import BM25Weights

SPARSE_VECTOR = "bm25"
TIE_MARGIN = 16  # extra points asked for, so ties at the k-th place are ordered by chunk id as in-process


class QdrantKeywordParams(QdrantConnectionParams):
    pass


@register(kind="keyword_index", icon="Database", category="index",
          en=("Qdrant sparse vectors", "BM25 term weights as sparse vectors in a Qdrant collection (exact)."),
          es=("Vectores dispersos de Qdrant",
              "Pesos BM25 de los términos como vectores dispersos en una colección de Qdrant (exacta)."),
          representation="Qdrant BM25 {collection}")
class QdrantKeywordIndex(QdrantEngine[QdrantKeywordParams], KeywordIndex[QdrantKeywordParams]):
    def add(self, weights: BM25Weights, identity: IndexIdentity) -> None:
        super().add(document_weights(weights), identity)

    def check_layout(self, identity: IndexIdentity) -> None:
        sparse = self.collection_config().sparse_vectors or {}
        if SPARSE_VECTOR not in sparse:
            raise EngineError(f"{self.where()} has no sparse vector {SPARSE_VECTOR!r} (not a dashrag keyword "
                              "collection)")

    def create(self, dimension: int, metric: str) -> None:
        from qdrant_client import models

        with self.engine_errors("creating the collection"):
            self.client.create_collection(self.name, vectors_config={}, sparse_vectors_config={
                SPARSE_VECTOR: models.SparseVectorParams()})

    def upload(self, rows: np.ndarray, weights: sp.csr_matrix) -> None:
        from qdrant_client import models

        chunks = self.require_infra().chunks
        with self.engine_errors("uploading term weights"):
            for start in range(0, len(rows), UPLOAD_BATCH):
                part = rows[start:start + UPLOAD_BATCH]
                block = weights[start:start + UPLOAD_BATCH]
                points = [models.PointStruct(id=int(chunks.ids[row]), payload=payload_of(chunks, int(row)),
                                             vector={SPARSE_VECTOR: models.SparseVector(
                                                 indices=block.indices[lo:hi].tolist(),
                                                 values=block.data[lo:hi].tolist())})
                          for row, lo, hi in zip(part.tolist(), block.indptr[:-1], block.indptr[1:])]
                self.client.upsert(self.name, wait=True, points=points)

    def search(self, queries: list[QueryTerms], k: int, restriction: Restriction | None,
               chunk_ids: list[int] | None = None) -> list[Hits]:
        from qdrant_client import models

        chunks = self.require_infra().chunks
        where = self._filter(restriction, chunk_ids)
        asked = [i for i, (terms, _) in enumerate(queries) if len(terms)]  # a query with no known term finds nothing
        requests = [models.QueryRequest(
            query=models.SparseVector(indices=np.asarray(queries[i][0]).tolist(),
                                      values=np.asarray(queries[i][1], dtype=np.float64).tolist()),
            using=SPARSE_VECTOR, limit=k + TIE_MARGIN, filter=where, with_payload=False) for i in asked]
        answers: list[Any] = []
        if requests:
            with self.engine_errors("searching"):
                answers = self.client.query_batch_points(self.name, requests=requests)
        hits: list[Hits] = [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))] * len(queries)
        for i, answer in zip(asked, answers):
            ids = [int(p.id) for p in answer.points]
            hits[i] = ranked_hits(ids, [float(p.score) for p in answer.points], chunks.rows_of(ids), k)
        return hits
