"""EdgeStore: embedded Qdrant on Qdrant Edge (``qdrant-edge-py``, Qdrant's Rust engine in this process).

A storage folder holds ``edge/<collection>/``: the collection's Edge shard in
``shard/`` (Qdrant's own segment format: HNSW graph, quantized vectors, payload
indexes) and its ownership record ``dashrag_record.json`` (written last, atomically:
a build killed half-way leaves a shard without a record, which no later build takes
for its own). The points, payload and vectors are laid out as on a server
(``qdrant_store.py``). The ``edge/`` level keeps the folder apart from a qdrant-client
local-mode folder of an older tree (``collection/``, ``meta.json``) in the same place.

Indexing follows Qdrant's own rule: a segment holding more than ``threshold_kb`` KB of
vectors gets its HNSW graph (and quantized vectors) when the build calls ``optimize``,
and a query whose segment or filter matches are smaller is answered by an exact scan.
An exact-only index builds no graph (``indexing_threshold`` 0).

``:memory:``: Edge always works on a folder, so an in-memory store is a temporary
folder removed on close. An Edge shard is opened by one ``EdgeShard`` at a time (it locks
its write-ahead log); the indexes of a process share one store per folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dashrag.core.persistence import atomic_write_json
from dashrag.filters.qdrant import PayloadIndex, edge_dialect, to_qdrant
from dashrag.indexes.engine import EngineFilter
from dashrag.indexes.qdrant_store import DenseLayout, Found, Layout, QdrantStore, SearchOptions, StoredVectors

RECORD_FILE = "dashrag_record.json"
SHARD = "shard"
EDGE_FOLDER = "edge"
PARTIAL_SUFFIX = ".partial"  # a collection copied by an update, renamed to its own name once changed
HIDDEN_CACHED = 16  # tombstone lists kept as Edge's types at once


class EdgeStore(QdrantStore):
    graph_follows_exact = True
    copies_collections = True

    def __init__(self, storage: Path | None):
        """``storage``: the embedded folder (``edge/`` inside it is ours); None: a temporary one (``:memory:``)."""
        self._temporary = storage is None
        self.root = Path(tempfile.mkdtemp(prefix="dashrag-qdrant-edge-")) if storage is None else storage / EDGE_FOLDER
        self._shards: dict[str, Any] = {}
        self._lock = threading.Lock()
        # tombstones searched lately (one tuple per node: shards share a store), as Edge's types, by the tuple's id
        self._hidden: dict[int, tuple[Sequence[int], Any, Any]] = {}

    # -- collections ------------------------------------------------------------------
    def _folder(self, name: str) -> Path:
        return self.root / name

    def _shard(self, name: str) -> Any:
        with self._lock:
            shard = self._shards.get(name)
            if shard is None:
                from qdrant_edge import EdgeShard

                shard = self._shards[name] = EdgeShard.load(str(self._folder(name) / SHARD))
            return shard

    def exists(self, name: str) -> bool:
        return (self._folder(name) / SHARD / "edge_config.json").is_file()

    def read_record(self, name: str) -> dict[str, Any] | None:
        path = self._folder(name) / RECORD_FILE
        if not path.is_file():
            return None
        record = json.loads(path.read_text())
        return record if isinstance(record, dict) else None

    def write_record(self, name: str, record: dict[str, Any]) -> None:
        atomic_write_json(self._folder(name) / RECORD_FILE, record)

    def drop(self, name: str) -> None:
        with self._lock:
            shard = self._shards.pop(name, None)
            if shard is not None:
                shard.close()
        shutil.rmtree(self._folder(name), ignore_errors=True)

    def create(self, name: str, layout: Layout) -> None:
        from qdrant_edge import EdgeShard

        folder = self._folder(name)
        folder.mkdir(parents=True, exist_ok=True)
        shard = EdgeShard.create(str(folder / SHARD), edge_config(layout))
        with self._lock:
            self._shards[name] = shard
        self.add_payload_indexes(name, layout.payload_indexes)  # before the points: the HNSW build links within them

    def add_payload_indexes(self, name: str, indexes: Sequence[PayloadIndex]) -> None:
        from qdrant_edge import PayloadSchemaType, UpdateOperation

        schemas = {"keyword": PayloadSchemaType.Keyword, "float": PayloadSchemaType.Float,
                   "bool": PayloadSchemaType.Bool}
        shard = self._shard(name)
        indexed = self.payload_indexes(name) if indexes else {}
        for key, schema in indexes:
            if key not in indexed:
                shard.update(UpdateOperation.create_field_index(key, schemas[schema]))

    def upsert_dense(self, name: str, ids: list[int], vectors: np.ndarray, payloads: list[dict[str, Any]]) -> None:
        from qdrant_edge import Point, UpdateOperation

        points = [Point(i, v, p) for i, v, p in zip(ids, np.asarray(vectors, dtype=np.float32).tolist(), payloads)]
        self._shard(name).update(UpdateOperation.upsert_points(points))

    def upsert_sparse(self, name: str, vector: str, ids: list[int], rows: sp.csr_matrix,
                      payloads: list[dict[str, Any]]) -> None:
        from qdrant_edge import Point, SparseVector, UpdateOperation

        points = [Point(i, {vector: SparseVector(rows.indices[lo:hi].tolist(), rows.data[lo:hi].tolist())}, p)
                  for i, lo, hi, p in zip(ids, rows.indptr[:-1], rows.indptr[1:], payloads)]
        self._shard(name).update(UpdateOperation.upsert_points(points))

    def delete_points(self, name: str, ids: list[int]) -> None:
        from qdrant_edge import UpdateOperation

        if ids:
            self._shard(name).update(UpdateOperation.delete_points(list(ids)))

    @contextmanager
    def changed_copy(self, source: str, target: str) -> Iterator[str]:
        """Copy ``source``'s shard files (its points, HNSW graph, quantized vectors and payload indexes as
        Edge wrote them: nothing read back, no graph built again) under a temporary name, let the caller
        change it, then rename it to ``target`` in one step (:meth:`published_as`). ``source`` is never
        opened for writing (nor opened at all unless this process has it open: then it is flushed first, so
        that what the copy reads is on disk), so the tree that searches it keeps answering from it until an
        update is published (docs/scale.md, "Dense updates on Qdrant Edge")."""
        with self._lock:
            opened = self._shards.get(source)
        if opened is not None:
            opened.flush()
        with self.published_as(target) as partial:
            shutil.copytree(self._folder(source) / SHARD, self._folder(partial) / SHARD)
            yield partial

    @contextmanager
    def new_collection(self, target: str, layout: Layout) -> Iterator[str]:
        """An empty collection with ``layout``, filled by the caller, renamed to ``target`` when it is done."""
        with self.published_as(target) as partial:
            self.create(partial, layout)
            yield partial

    @contextmanager
    def published_as(self, target: str) -> Iterator[str]:
        """A temporary name for a collection the caller writes, renamed to ``target`` in one step when the
        context ends without an error (its shard closed first: it is on disk). A kill before the rename leaves
        only the temporary folder, which the next write to ``target`` removes; an error removes it at once."""
        partial = target + PARTIAL_SUFFIX
        self.drop(partial)
        try:
            yield partial
            with self._lock:
                shard = self._shards.pop(partial, None)
            if shard is not None:
                shard.close()
            os.replace(self._folder(partial), self._folder(target))
        except BaseException:
            self.drop(partial)
            raise

    def finish(self, name: str) -> None:
        shard = self._shard(name)
        shard.optimize()  # blocks until the graph and quantized vectors of every large segment are built
        shard.flush()

    def count(self, name: str) -> int:
        from qdrant_edge import CountRequest

        return int(self._shard(name).count(CountRequest(exact=True)))

    def indexed_vectors(self, name: str) -> int:
        """How many vectors Edge searches through its HNSW graph (0: every segment is scanned exactly)."""
        return int(self._shard(name).info().indexed_vectors_count)

    def payload_indexes(self, name: str) -> dict[str, str]:
        """The payload keys Edge has indexed and how (``"float"``, ...): what ``create`` asked for, read back."""
        return {key: str(info.data_type).rsplit(".", 1)[-1].lower()
                for key, info in self._shard(name).info().payload_schema.items()}

    def stored_vectors(self, name: str) -> StoredVectors:
        config = json.loads((self._folder(name) / SHARD / "edge_config.json").read_text())
        dense = config.get("vectors") or {}
        unnamed = dense.get("")
        return StoredVectors(size=None if unnamed is None else int(unnamed["size"]),
                             named=tuple(sorted(k for k in dense if k)),
                             sparse=tuple(sorted(config.get("sparse_vectors") or {})))

    # -- search -------------------------------------------------------------------------
    def search_dense(self, name: str, queries: np.ndarray, k: int, where: EngineFilter | None,
                     options: SearchOptions, hidden: Sequence[int] = ()) -> list[Found]:
        from qdrant_edge import Filter, Query, QueryRequest

        params, condition = search_params(options), edge_filter(where)
        if hidden:  # inside Edge's search, so the k answers are k live points
            alone, hide = self._hiding(hidden)
            condition = alone if condition is None else Filter(must=[condition], must_not=[hide])
        requests = [QueryRequest(limit=k, query=Query.Nearest(q), filter=condition, params=params,
                                 with_payload=False, with_vector=False)
                    for q in np.asarray(queries, dtype=np.float32).tolist()]
        return self._run(name, requests)

    def search_sparse(self, name: str, vector: str, queries: list[tuple[list[int], list[float]]], k: int,
                      where: EngineFilter | None) -> list[Found]:
        from qdrant_edge import Query, QueryRequest, SparseVector

        condition = edge_filter(where)
        requests = [QueryRequest(limit=k, query=Query.Nearest(SparseVector(indices, values), using=vector),
                                 filter=condition, with_payload=False, with_vector=False)
                    for indices, values in queries]
        return self._run(name, requests)

    def _hiding(self, hidden: Sequence[int]) -> tuple[Any, Any]:
        """The filter that hides ``hidden`` alone, and its condition, made once per tuple of ids (a tree's
        tombstones): Edge's Python types copy a set of ids into Rust when they are made (0.10 s for 100,000 ids)
        and again, about 20 times faster, when a request takes a made one (5 ms for 100,000: docs/scale.md)."""
        from qdrant_edge import Filter, HasIdCondition

        with self._lock:
            cached = self._hidden.get(id(hidden))
            if cached is None or cached[0] is not hidden:
                if len(self._hidden) >= HIDDEN_CACHED:
                    self._hidden.clear()
                condition = HasIdCondition(point_ids=set(hidden))
                cached = self._hidden[id(hidden)] = (hidden, Filter(must_not=[condition]), condition)
        return cached[1], cached[2]

    def _run(self, name: str, requests: list[Any]) -> list[Found]:
        from qdrant_edge import QueryBatchRequest

        if not requests:
            return []
        answers = self._shard(name).query_batch(QueryBatchRequest(requests))
        return [[(int(p.id), float(p.score)) for p in answer] for answer in answers]

    def payload(self, name: str, point_id: int) -> dict[str, Any]:
        records = self._shard(name).retrieve([point_id], with_payload=True, with_vector=False)
        return dict(records[0].payload or {}) if records else {}

    def vectors(self, name: str, ids: list[int]) -> dict[int, list[float]]:
        records = self._shard(name).retrieve(list(ids), with_payload=False, with_vector=True)
        return {int(r.id): r.vector for r in records}

    # -- lifetime ---------------------------------------------------------------------
    def save(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                shard.flush()

    def close(self) -> None:
        with self._lock:
            shards, self._shards = list(self._shards.values()), {}
        for shard in shards:
            shard.close()
        if self._temporary:
            shutil.rmtree(self.root, ignore_errors=True)


def edge_config(layout: Layout) -> Any:
    from qdrant_edge import EdgeConfig, EdgeOptimizersConfig, EdgeSparseVectorParams

    sparse = {layout.sparse: EdgeSparseVectorParams()} if layout.sparse else None
    if layout.dense is None:
        return EdgeConfig(sparse_vectors=sparse)
    dense = layout.dense
    return EdgeConfig(vectors=dense_params(dense), sparse_vectors=sparse, optimizers=EdgeOptimizersConfig(
        indexing_threshold=dense.threshold_kb if dense.graph else 0))


def dense_params(dense: DenseLayout) -> Any:
    from qdrant_edge import Distance, EdgeVectorParams, HnswIndexConfig

    return EdgeVectorParams(size=dense.size, distance=getattr(Distance, dense.distance),
                            quantization_config=quantization_config(dense.quantization),
                            hnsw_config=HnswIndexConfig(m=dense.hnsw_m, ef_construct=dense.hnsw_ef_construct,
                                                        full_scan_threshold=dense.threshold_kb))


def quantization_config(kind: str) -> Any:
    """Qdrant's quantization presets: int8 with the 0.99 quantile (outliers clipped), binary one bit per
    dimension; the quantized copy is kept in RAM, the original vectors serve the rescoring."""
    from qdrant_edge import BinaryQuantizationConfig, ScalarQuantizationConfig, ScalarType

    if kind == "int8":
        return ScalarQuantizationConfig(type=ScalarType.Int8, quantile=0.99, always_ram=True)
    if kind == "binary":
        return BinaryQuantizationConfig(always_ram=True)
    return None


def search_params(options: SearchOptions) -> Any:
    """Exact search ignores the quantized vectors (exact means the original ones, as in-process)."""
    from qdrant_edge import QuantizationSearchParams, SearchParams

    if options.exact:
        return SearchParams(exact=True, quantization=QuantizationSearchParams(ignore=True))
    return SearchParams(hnsw_ef=options.hnsw_ef, quantization=QuantizationSearchParams(
        rescore=options.rescore, oversampling=options.oversampling))


def edge_filter(where: EngineFilter | None) -> Any:
    """The restriction as an Edge payload filter (every condition must hold)."""
    if where is None:
        return None
    from qdrant_edge import FieldCondition, Filter, HasIdCondition, MatchAny

    must: list[Any] = []
    if where.source_ids is not None:
        must.append(FieldCondition(key="source_id", match=MatchAny(any=list(where.source_ids))))
    if where.metadata is not None:
        condition = to_qdrant(where.metadata, edge_dialect())
        if condition is None:  # what Qdrant cannot say: the exact list of the chunks the filter allows
            return edge_filter(where.without_metadata())
        must.append(condition)
    if where.chunk_ids is not None:
        must.append(HasIdCondition(point_ids=set(where.chunk_ids)))
    return Filter(must=must) if must else None
