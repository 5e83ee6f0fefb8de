"""ClientStore: Qdrant collections through qdrant-client: a server or cluster, or an older embedded folder.

With a ``url`` this is the Qdrant server (sharding and replication are the server's).
Without one it opens an embedded folder saved before dashrag moved to Qdrant Edge:
qdrant-client's local mode (pure Python, exact search only, points pickled in SQLite),
kept so that those trees still load and answer as they did (docs/engines.md, "Older
embedded trees"). New embedded collections are Edge's (``qdrant_edge_store.py``).

What each collection holds is recorded in the side collection ``dashrag_records`` (one
point per collection, id derived from its name, the record as payload).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from dashrag.filters.qdrant import client_dialect, to_qdrant
from dashrag.indexes.engine import UPLOAD_BATCH, EngineFilter
from dashrag.indexes.qdrant_store import DenseLayout, Found, Layout, QdrantStore, SearchOptions, StoredVectors

RECORDS_COLLECTION = "dashrag_records"
MEMORY = ":memory:"


class ClientStore(QdrantStore):
    def __init__(self, location: str, api_key: str | None, timeout_s: int):
        self.client = connect_qdrant(location, api_key, timeout_s)
        self._server = location.startswith(("http://", "https://"))

    def _record_id(self, name: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"dashrag-collection:{name}"))

    def exists(self, name: str) -> bool:
        return bool(self.client.collection_exists(name))

    def read_record(self, name: str) -> dict[str, Any] | None:
        if not self.client.collection_exists(RECORDS_COLLECTION):
            return None
        found = self.client.retrieve(RECORDS_COLLECTION, ids=[self._record_id(name)], with_payload=True)
        return {k: v for k, v in found[0].payload.items() if k != "collection"} if found else None

    def write_record(self, name: str, record: dict[str, Any]) -> None:
        from qdrant_client import models

        if not self.client.collection_exists(RECORDS_COLLECTION):
            self.client.create_collection(RECORDS_COLLECTION, vectors_config=models.VectorParams(
                size=1, distance=models.Distance.DOT))
        self.client.upsert(RECORDS_COLLECTION, wait=True, points=[models.PointStruct(
            id=self._record_id(name), vector=[1.0], payload={**record, "collection": name})])

    def drop(self, name: str) -> None:
        from qdrant_client import models

        self.client.delete_collection(name)
        if self.client.collection_exists(RECORDS_COLLECTION):
            self.client.delete(RECORDS_COLLECTION, points_selector=models.PointIdsList(points=[self._record_id(name)]))

    def create(self, name: str, layout: Layout) -> None:
        from qdrant_client import models

        sparse = {layout.sparse: models.SparseVectorParams()} if layout.sparse else None
        dense = layout.dense
        if dense is None:
            self.client.create_collection(name, vectors_config={}, sparse_vectors_config=sparse)
        else:
            self.client.create_collection(
                name, vectors_config=dense_params(dense), sparse_vectors_config=sparse,
                hnsw_config=models.HnswConfigDiff(m=dense.hnsw_m, ef_construct=dense.hnsw_ef_construct,
                                                  full_scan_threshold=dense.threshold_kb),
                optimizers_config=models.OptimizersConfigDiff(indexing_threshold=dense.threshold_kb))
        schemas = {"keyword": models.PayloadSchemaType.KEYWORD, "float": models.PayloadSchemaType.FLOAT,
                   "bool": models.PayloadSchemaType.BOOL}
        for key, schema in layout.payload_indexes:
            self.client.create_payload_index(name, key, field_schema=schemas[schema], wait=True)

    def upsert_dense(self, name: str, ids: list[int], vectors: np.ndarray, payloads: list[dict[str, Any]]) -> None:
        from qdrant_client import models

        for start in range(0, len(ids), UPLOAD_BATCH):
            end = start + UPLOAD_BATCH
            self.client.upsert(name, wait=True, points=models.Batch(
                ids=list[int | str | uuid.UUID](ids[start:end]),
                vectors=np.asarray(vectors[start:end], dtype=np.float32).tolist(),
                payloads=payloads[start:end]))

    def upsert_sparse(self, name: str, vector: str, ids: list[int], rows: sp.csr_matrix,
                      payloads: list[dict[str, Any]]) -> None:
        from qdrant_client import models

        for start in range(0, len(ids), UPLOAD_BATCH):
            block = rows[start:start + UPLOAD_BATCH]
            points = [models.PointStruct(id=i, payload=p, vector={vector: models.SparseVector(
                indices=block.indices[lo:hi].tolist(), values=block.data[lo:hi].tolist())})
                for i, p, lo, hi in zip(ids[start:start + UPLOAD_BATCH], payloads[start:start + UPLOAD_BATCH],
                                        block.indptr[:-1], block.indptr[1:])]
            self.client.upsert(name, wait=True, points=points)

    def count(self, name: str) -> int:
        return int(self.client.count(name, exact=True).count)

    def stored_vectors(self, name: str) -> StoredVectors:
        params = self.client.get_collection(name).config.params
        vectors = params.vectors
        size = getattr(vectors, "size", None)
        named = tuple(sorted(vectors)) if isinstance(vectors, dict) else ()
        return StoredVectors(size=None if size is None else int(size), named=named,
                             sparse=tuple(sorted(params.sparse_vectors or {})))

    def search_dense(self, name: str, queries: np.ndarray, k: int, where: EngineFilter | None,
                     options: SearchOptions, hidden: Sequence[int] = ()) -> list[Found]:
        from qdrant_client import models

        # qdrant-client's local mode is always exact and warns about search params: servers only
        params = search_params(options) if self._server else None
        condition = client_filter(where)
        if hidden:
            condition = models.Filter(must=[condition] if condition is not None else None,
                                      must_not=[models.HasIdCondition(has_id=list(hidden))])
        requests = [models.QueryRequest(query=q, limit=k, filter=condition, params=params, with_payload=False)
                    for q in np.asarray(queries, dtype=np.float32).tolist()]
        return self._run(name, requests)

    def search_sparse(self, name: str, vector: str, queries: list[tuple[list[int], list[float]]], k: int,
                      where: EngineFilter | None) -> list[Found]:
        from qdrant_client import models

        condition = client_filter(where)
        requests = [models.QueryRequest(query=models.SparseVector(indices=indices, values=values), using=vector,
                                        limit=k, filter=condition, with_payload=False)
                    for indices, values in queries]
        return self._run(name, requests)

    def _run(self, name: str, requests: list[Any]) -> list[Found]:
        if not requests:
            return []
        answers = self.client.query_batch_points(name, requests=requests)
        return [[(int(p.id), float(p.score)) for p in answer.points] for answer in answers]

    def payload(self, name: str, point_id: int) -> dict[str, Any]:
        points = self.client.retrieve(name, ids=[point_id], with_payload=True)
        return dict(points[0].payload or {}) if points else {}

    def vectors(self, name: str, ids: list[int]) -> dict[int, list[float]]:
        return {int(p.id): p.vector for p in self.client.retrieve(name, ids=ids, with_vectors=True)}

    def close(self) -> None:
        self.client.close()


def connect_qdrant(location: str, api_key: str | None, timeout_s: int) -> Any:
    """A client for a server URL, ``:memory:``, or a local-mode storage folder (an absolute path)."""
    from qdrant_client import QdrantClient

    if location.startswith(("http://", "https://")):
        return QdrantClient(url=location, api_key=api_key, timeout=timeout_s, prefer_grpc=False,
                            check_compatibility=False)
    if location == MEMORY:
        return QdrantClient(location=MEMORY)
    return QdrantClient(path=location)


def dense_params(dense: DenseLayout) -> Any:
    from qdrant_client import models

    quantization: models.ScalarQuantization | models.BinaryQuantization | None = None
    if dense.quantization == "int8":
        quantization = models.ScalarQuantization(scalar=models.ScalarQuantizationConfig(
            type=models.ScalarType.INT8, quantile=0.99, always_ram=True))
    elif dense.quantization == "binary":
        quantization = models.BinaryQuantization(binary=models.BinaryQuantizationConfig(always_ram=True))
    return models.VectorParams(size=dense.size, distance=models.Distance(dense.distance),
                               quantization_config=quantization)


def search_params(options: SearchOptions) -> Any:
    from qdrant_client import models

    if options.exact:
        return models.SearchParams(exact=True, quantization=models.QuantizationSearchParams(ignore=True))
    return models.SearchParams(hnsw_ef=options.hnsw_ef, quantization=models.QuantizationSearchParams(
        rescore=options.rescore, oversampling=options.oversampling))


def client_filter(where: EngineFilter | None) -> Any:
    """The restriction as a qdrant-client payload filter (every condition must hold)."""
    if where is None:
        return None
    from qdrant_client import models

    must: list[Any] = []
    if where.source_ids is not None:
        must.append(models.FieldCondition(key="source_id", match=models.MatchAny(any=list(where.source_ids))))
    if where.metadata is not None:
        condition = to_qdrant(where.metadata, client_dialect())
        if condition is None:  # what Qdrant cannot say: the exact list of the chunks the filter allows
            return client_filter(where.without_metadata())
        must.append(condition)
    if where.chunk_ids is not None:
        must.append(models.HasIdCondition(has_id=list(where.chunk_ids)))
    return models.Filter(must=must) if must else None
