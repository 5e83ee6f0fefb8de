"""Where a Qdrant index's collections live: the calls both Qdrant stores answer, and what they take.

The Qdrant indexes (``qdrant_engine.py``) keep one collection per node and talk to it
through a *store*, one of two:

* ``EdgeStore`` (``qdrant_edge_store.py``): embedded, Qdrant Edge, the Rust engine in
  this process: a folder with one Edge shard per collection (HNSW, quantization,
  sparse vectors, payload indexes); also ``:memory:`` (a temporary folder);
* ``ClientStore`` (``qdrant_client_store.py``): qdrant-client against a Qdrant server or
  cluster (``url``), and the embedded folders saved before Edge (qdrant-client's local
  mode), which still load.

Both hold the same collection layout (one point per chunk, id = chunk id, the payload
of ``engine.payloads_of``, an unnamed dense vector or the sparse vector ``bm25``, keyword
payload indexes on the filtered fields) and the same ownership record, so a tree moves
between them by re-indexing (docs/engines.md). A store raises its client's own
exceptions; the index turns them into one ``EngineError`` naming Qdrant and the collection.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dashrag.filters.qdrant import PayloadIndex
from dashrag.indexes.engine import EngineFilter

Found = list[tuple[int, float]]  # (point id, Qdrant's score), best first


@dataclass(frozen=True)
class DenseLayout:
    """An unnamed dense vector per point, and how Qdrant indexes it."""

    size: int
    distance: str  # Qdrant's name: "Cosine", "Dot", "Euclid", "Manhattan"
    hnsw_m: int
    hnsw_ef_construct: int
    threshold_kb: int  # below this many KB of vectors, a segment (or a filter's matches) is scanned, no graph
    quantization: str  # "none", "int8", "binary"
    graph: bool  # build the HNSW graph (an exact-only index on Edge skips it)


@dataclass(frozen=True)
class Layout:
    """What a collection is created with."""

    dense: DenseLayout | None = None
    sparse: str | None = None  # the name of the one sparse vector
    payload_indexes: tuple[PayloadIndex, ...] = ()  # (key, "keyword" | "float" | "bool"): the filtered fields


@dataclass(frozen=True)
class StoredVectors:
    """What an existing collection's points carry (read back to check a loaded tree's layout)."""

    size: int | None  # the unnamed dense vector's size, None when there is none
    named: tuple[str, ...] = ()
    sparse: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchOptions:
    exact: bool = True
    hnsw_ef: int | None = None
    rescore: bool = True  # quantized collections: re-rank the candidates by their original vectors
    oversampling: float | None = None


class QdrantStore:
    """The calls a Qdrant index makes on its collections (see the module docstring)."""

    #: an exact-only dense index builds no HNSW graph (so it is part of the collection's record)
    graph_follows_exact = False
    #: a collection can be copied by its files (an embedded engine: ``changed_copy``); a server's cannot
    copies_collections = False

    def exists(self, name: str) -> bool:
        raise NotImplementedError

    def read_record(self, name: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def write_record(self, name: str, record: dict[str, Any]) -> None:
        raise NotImplementedError

    def drop(self, name: str) -> None:
        raise NotImplementedError

    def create(self, name: str, layout: Layout) -> None:
        raise NotImplementedError

    def upsert_dense(self, name: str, ids: list[int], vectors: np.ndarray, payloads: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def upsert_sparse(self, name: str, vector: str, ids: list[int], rows: sp.csr_matrix,
                      payloads: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def delete_points(self, name: str, ids: list[int]) -> None:
        raise NotImplementedError

    def finish(self, name: str) -> None:
        """Every point is in: build what the layout asks for (HNSW graph, quantization) and make it durable."""

    def changed_copy(self, source: str, target: str) -> AbstractContextManager[str]:
        """A context in which the caller changes a copy of collection ``source`` (the name it yields) that
        becomes ``target`` when the context ends without an error; only where ``copies_collections``."""
        raise NotImplementedError

    def new_collection(self, target: str, layout: Layout) -> AbstractContextManager[str]:
        """A context in which the caller fills a new, empty collection (the name it yields) that becomes
        ``target`` when the context ends without an error; only where ``copies_collections``."""
        raise NotImplementedError

    def add_payload_indexes(self, name: str, indexes: Sequence[PayloadIndex]) -> None:
        """Index these payload keys of an existing collection (those it does not index yet)."""
        raise NotImplementedError

    def payload_indexes(self, name: str) -> dict[str, str]:
        """The payload keys the collection has indexed and how (``"keyword"``, ``"float"``, ``"bool"``)."""
        raise NotImplementedError

    def count(self, name: str) -> int:
        raise NotImplementedError

    def stored_vectors(self, name: str) -> StoredVectors:
        raise NotImplementedError

    def search_dense(self, name: str, queries: np.ndarray, k: int, where: EngineFilter | None,
                     options: SearchOptions, hidden: Sequence[int] = ()) -> list[Found]:
        """Per query, the k best points that ``where`` allows and ``hidden`` does not name (a segment's
        tombstones, ``qdrant_segments.py``), best first."""
        raise NotImplementedError

    def search_sparse(self, name: str, vector: str, queries: list[tuple[list[int], list[float]]], k: int,
                      where: EngineFilter | None) -> list[Found]:
        raise NotImplementedError

    def payload(self, name: str, point_id: int) -> dict[str, Any]:
        """The payload of one point ({} when there is no such point)."""
        raise NotImplementedError

    def vectors(self, name: str, ids: list[int]) -> dict[int, list[float]]:
        raise NotImplementedError

    def save(self) -> None:
        """Make everything written so far durable on disk (before a saved tree refers to it)."""

    def close(self) -> None:
        raise NotImplementedError
