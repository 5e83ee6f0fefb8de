"""QdrantVectorIndex: the dense node's vectors in a Qdrant collection (embedded, or a server / cluster).

Where the collection lives, what each point's payload holds, the ``dashrag_records``
ownership record and the payload filters are shared with the keyword index
(``qdrant_engine.py``). This module adds the vectors: one unnamed vector per point,
``query_points`` with ``exact`` or ``hnsw_ef``, scores converted to the in-process ones
(cosine and dot as they are, euclidean negated), so the same tree ranks the same way.

Embedded mode searches exactly whatever ``exact`` says (qdrant-client's local mode has
no HNSW).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.errors import EngineError
from dashrag.indexes.base import Hits, VectorIndex
from dashrag.indexes.engine import UPLOAD_BATCH, payload_of
from dashrag.indexes.qdrant_engine import QdrantConnectionParams, QdrantEngine

DISTANCES = {"cosine": "Cosine", "dot": "Dot", "euclidean": "Euclid", "manhattan": "Manhattan"}


class QdrantParams(QdrantConnectionParams):
    exact: bool = Field(False, description=(
        "Exact (brute-force) search inside the engine; false: the engine's HNSW index (approximate, faster at scale)."))
    hnsw_ef: int | None = Field(None, ge=1, description="HNSW search breadth (default: the collection's ef_construct).")


@register(kind="vector_index", icon="Database", category="index",
          en=("Qdrant collection", "Chunk vectors in a Qdrant collection: embedded, or a server or cluster."),
          es=("Colección de Qdrant",
              "Vectores de los fragmentos en una colección de Qdrant: embebida, o un servidor o clúster."),
          representation="Qdrant {collection} exact={exact}")
class QdrantVectorIndex(QdrantEngine[QdrantParams], VectorIndex[QdrantParams]):
    def actual_dimension(self) -> int:
        vectors = self.collection_config().vectors
        size = getattr(vectors, "size", None)
        if size is None:
            raise EngineError(f"{self.where()} has named vectors ({sorted(vectors)}), not one unnamed vector per point")
        return int(size)

    def create(self, dimension: int, metric: str) -> None:
        from qdrant_client import models

        with self.engine_errors("creating the collection"):
            self.client.create_collection(self.name, vectors_config=models.VectorParams(
                size=dimension, distance=models.Distance(DISTANCES[metric])))

    def upload(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        from qdrant_client import models

        chunks = self.require_infra().chunks
        with self.engine_errors("uploading vectors"):
            for start in range(0, len(rows), UPLOAD_BATCH):
                part = rows[start:start + UPLOAD_BATCH]
                self.client.upsert(self.name, wait=True, points=models.Batch(
                    ids=chunks.ids[part].tolist(), vectors=vectors[start:start + UPLOAD_BATCH].tolist(),
                    payloads=[payload_of(chunks, int(r)) for r in part]))

    # -- search ------------------------------------------------------------------
    def search(self, query_vectors: np.ndarray, k: int, restriction: Restriction | None) -> list[Hits]:
        from qdrant_client import models

        chunks = self.require_infra().chunks
        # embedded mode is always exact and warns about search params: send them to servers only
        params = models.SearchParams(exact=self.params.exact, hnsw_ef=self.params.hnsw_ef) if self.params.url else None
        where = self._filter(restriction)
        requests = [models.QueryRequest(query=q.tolist(), limit=k, filter=where, params=params, with_payload=False)
                    for q in np.asarray(query_vectors, dtype=np.float32)]
        with self.engine_errors("searching"):
            answers = self.client.query_batch_points(self.name, requests=requests)
        sign = -1.0 if self._record and self._record["metric"] in ("euclidean", "manhattan") else 1.0
        hits: list[Hits] = []
        for answer in answers:
            ids = [int(p.id) for p in answer.points]
            hits.append((chunks.rows_of(ids), np.asarray([sign * p.score for p in answer.points], dtype=np.float32)))
        return hits

    def vectors_for(self, rows: np.ndarray) -> np.ndarray:
        ids = self.require_infra().chunks.ids[np.asarray(rows, dtype=np.int64)].tolist()
        with self.engine_errors("reading vectors"):
            found = {int(p.id): p.vector for p in self.client.retrieve(self.name, ids=ids, with_vectors=True)}
        missing = [i for i in ids if i not in found]
        if missing:
            raise EngineError(f"{self.where()} lacks the points of chunk(s) {missing[:10]} (another shard, or edited)")
        return np.asarray([found[i] for i in ids], dtype=np.float32)

