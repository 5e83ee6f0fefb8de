"""What the Qdrant indexes (dense vectors, BM25 sparse vectors) share: where the collection lives, records, errors.

* **Where**: without ``url``, embedded on **Qdrant Edge** (Qdrant's Rust engine in this
  process, ``qdrant_edge_store.py``): ``path`` relative to the tree's folder, default
  ``qdrant/`` inside it, so the collection travels with the saved tree; ``":memory:"``
  for a throw-away one (cannot be saved). With ``url``, a Qdrant server or cluster
  through qdrant-client (``qdrant_client_store.py``; sharding and replication are
  Qdrant's); the API key is a credential *reference* (``EnvCredential``), read when
  connecting, never saved.
* **What**: one collection per distinct node, one point per chunk, id = chunk id,
  payload ``chunk_id``, ``text``, ``source_id``, ``categories``, ``metadata`` and
  ``filterable`` (``dashrag/filters/payload.py``), keyword payload indexes on
  ``source_id``, ``filterable.present`` and every string field of ``filterable``; what a
  collection holds is recorded beside it (``qdrant_store.py``: the same layout on both stores).
* **Filters**: the restriction is a payload filter *inside* the search (``source_id``
  match any, a metadata filter over ``filterable`` (``dashrag/filters/qdrant.py``), or
  ``has_id`` for an opaque predicate); a collection built before ``filterable`` existed
  gets the exact list of matching points instead.
* **Older trees**: an embedded tree saved before Edge (its reference names no
  ``embedded_engine``) is opened with qdrant-client's local mode as before and keeps it
  (saving it again keeps that engine); rebuilding it moves it to Edge (docs/engines.md).

One process at a time may open an embedded folder (Edge and the local mode lock it);
within a process every node on the same folder (dense and keyword alike) shares one store.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import Field

from dashrag.core.params import ComponentSpec, ParamKind, component_field, kind_field
from dashrag.core.persistence import load_json, saved_folder_of
from dashrag.core.restriction import Restriction
from dashrag.errors import EngineError, PersistenceError
from dashrag.filters.qdrant import PAYLOAD_KEY, PayloadIndex, payload_indexes
from dashrag.indexes.base import IndexIdentity
from dashrag.indexes.engine import REFERENCE_FILE, EngineFilter, EngineIndex, EngineParams, engine_filter
from dashrag.indexes.qdrant_client_store import MEMORY, ClientStore
from dashrag.indexes.qdrant_edge_store import EdgeStore
from dashrag.indexes.qdrant_store import Layout, QdrantStore

EDGE = "edge"  # the saved reference's ``embedded_engine``
LOCAL_MODE = "qdrant-client-local"  # what an embedded reference without one was built with


class QdrantConnectionParams(EngineParams):
    url: str | None = kind_field(ParamKind.ENDPOINT, None, default_port=6333, description=(
        "URL of a Qdrant server or cluster (http://host:6333); empty: embedded, on Qdrant Edge in this process."))
    path: str = kind_field(ParamKind.STORAGE_PATH, "qdrant", description=(
        "Embedded mode: storage folder, relative to the tree's folder (or absolute); ':memory:' keeps nothing."))
    api_key: ComponentSpec | None = component_field("credential", None, optional=True, description=(
        "Server mode: the API key, as a reference (an environment variable), never the key itself."))
    collection: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]{1,200}$", description=(
        "Collection name (default: derived from what it holds: corpus, model or scoring, shard)."))
    timeout_s: int = Field(10, ge=1, le=600, description="Server mode: seconds before a request fails.")


_shared_stores: dict[tuple[str, str], list[Any]] = {}  # (engine, resolved folder) → [store, users]
_shared_lock = threading.Lock()

Q = TypeVar("Q", bound=QdrantConnectionParams)


class QdrantEngine(EngineIndex[Q], Generic[Q]):
    """An index held in a Qdrant collection; a subclass says what the points carry and how to search them."""

    engine_name = "Qdrant"
    object_kind = "collection"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._store: QdrantStore | None = None
        self._shared_key: tuple[str, str] | None = None
        self._embedded_engine = EDGE  # an older saved tree's reference changes it (load_from)
        self._filterable: bool | None = None

    # -- where -------------------------------------------------------------------------
    def _storage(self) -> Path:
        path = Path(self.params.path)
        return path if path.is_absolute() else self.require_infra().folder / path

    def display_location(self) -> str:
        if self.params.url:
            return strip_secrets(self.params.url)
        if self.params.path == MEMORY:
            return "memory (Qdrant Edge)"
        engine = "Qdrant Edge" if self._embedded_engine == EDGE else "qdrant-client local mode"
        return f"embedded storage {self._storage()} ({engine})"

    @property
    def process_bound(self) -> bool:
        """An embedded folder: Qdrant Edge locks a shard's write-ahead log (qdrant-client local mode the folder)."""
        return not self.params.url and self.params.path != MEMORY

    @property
    def store(self) -> QdrantStore:
        if self._store is None:
            with self.engine_errors("connect"):
                self._store = self._connect()
        return self._store

    def _connect(self) -> QdrantStore:
        if self.params.url:
            key = self.nested["api_key"].resolve() if "api_key" in self.nested else None
            return ClientStore(self.params.url, key, self.params.timeout_s)
        if self.params.path == MEMORY:
            return EdgeStore(None)
        storage = self._storage()
        storage.mkdir(parents=True, exist_ok=True)
        key = (self._embedded_engine, str(storage.resolve()))
        with _shared_lock:
            entry = _shared_stores.get(key)
            if entry is None:
                store: QdrantStore = EdgeStore(Path(key[1])) if self._embedded_engine == EDGE else \
                    ClientStore(key[1], None, self.params.timeout_s)
                entry = _shared_stores[key] = [store, 0]
            entry[1] += 1
        self._shared_key = key
        return entry[0]

    def _close(self) -> None:
        if self._store is None:
            return
        if self._shared_key is not None:
            with _shared_lock:
                entry = _shared_stores.get(self._shared_key)
                if entry is not None:
                    entry[1] -= 1
                    if entry[1] <= 0:
                        del _shared_stores[self._shared_key]
                        entry[0].close()
            self._shared_key = None
        else:
            self._store.close()
        self._store = None

    def describe_error(self, exc: Exception) -> str:
        return describe_qdrant_error(exc)

    # -- the engine object -------------------------------------------------------------
    def configured_name(self) -> str | None:
        return self.params.collection

    def exists(self) -> bool:
        return self.collection_exists(self.name)

    def collection_exists(self, name: str) -> bool:
        """Whether the store holds collection ``name`` (this node's, or the one an update would write)."""
        with self.engine_errors("checking the collection"):
            return self.store.exists(name)

    def read_record(self) -> dict[str, Any] | None:
        with self.engine_errors("reading the dashrag record"):
            return self.store.read_record(self.name)

    def count(self) -> int:
        with self.engine_errors("counting points"):
            return self.store.count(self.name)

    def drop(self) -> None:
        with self.engine_errors("dropping the collection (--overwrite)"):
            self.store.drop(self.name)

    def create(self, dimension: int, metric: str) -> None:
        with self.engine_errors("creating the collection"):
            self.store.create(self.name, self.layout(dimension, metric))

    def layout(self, dimension: int, metric: str) -> Layout:
        """What the collection is created with (a subclass: its vectors)."""
        raise NotImplementedError

    def payload_indexes(self) -> tuple[PayloadIndex, ...]:
        """What this node's collection indexes: its whole corpus's filtered fields (``filter_payload_indexes``)."""
        return filter_payload_indexes(self.require_infra().chunks.metadata_columns)

    def finish_build(self, record: dict[str, Any]) -> None:
        with self.engine_errors("building the collection's indexes"):
            self.store.finish(self.name)
        with self.engine_errors("writing the dashrag record"):
            self.store.write_record(self.name, record)

    # -- saved reference ---------------------------------------------------------------
    def reference_extra(self) -> dict[str, Any]:
        if self.params.url:
            return {"embedded_path": None}
        return {"embedded_path": self.params.path, "embedded_engine": self._embedded_engine}

    def save_into(self, folder: Path) -> None:
        if not self.params.url:
            if self.params.path == MEMORY:
                raise PersistenceError(f"{self.where()}: an in-memory collection cannot be saved; "
                                       "use the embedded storage folder (the default) or a server url")
            if not Path(self.params.path).is_absolute() and \
                    saved_folder_of(folder).resolve() != self.require_infra().folder.resolve():
                raise PersistenceError(
                    f"{self.where()}: the embedded collection lives in the build's folder "
                    f"{self.require_infra().folder}; save the tree there, or give an absolute `path`")
            with self.engine_errors("flushing to disk"):
                self.store.save()
        super().save_into(folder)

    def load_from(self, folder: Path, identity: IndexIdentity) -> None:
        reference = load_json(folder / REFERENCE_FILE)
        if not self.params.url and isinstance(reference, dict):
            engine = reference.get("embedded_engine", LOCAL_MODE)  # saved before Edge: qdrant-client's local mode
            if engine not in (EDGE, LOCAL_MODE):
                raise PersistenceError(f"{folder / REFERENCE_FILE}: unknown embedded Qdrant engine {engine!r}")
            self._embedded_engine = str(engine)
        super().load_from(folder, identity)

    # -- search helpers ----------------------------------------------------------------
    def _filter(self, restriction: Restriction | None, chunk_ids: list[int] | None = None) -> EngineFilter | None:
        """The restriction as engine conditions; ``chunk_ids``: only these points (scoring given chunks)."""
        if chunk_ids is not None:
            return EngineFilter(chunk_ids=chunk_ids)
        where = engine_filter(restriction, self.require_infra().chunks)
        if where is not None and where.metadata is not None and not self.holds_filter_payload():
            where = where.without_metadata()
        return where

    def holds_filter_payload(self) -> bool:
        """Whether the points carry ``filterable`` (collections built before metadata filters do not)."""
        if self._filterable is None:
            rows = self.shard_rows()
            first = int(self.require_infra().chunks.ids[rows[0]]) if len(rows) else None
            with self.engine_errors("reading a point's payload"):
                self._filterable = first is not None and PAYLOAD_KEY in self.store.payload(self.name, first)
        return self._filterable

    def missing_points(self, missing: list[int]) -> EngineError:
        return EngineError(f"{self.where()} lacks the points of chunk(s) {missing[:10]} (another shard, or edited)")


def filter_payload_indexes(columns: Any) -> tuple[PayloadIndex, ...]:
    """The payload indexes of the fields a restriction filters on, for chunks with metadata ``columns``: documents
    by ``source_id``, and the metadata fields by kind (``filters/qdrant.payload_indexes``)."""
    return (("source_id", "keyword"), *payload_indexes(columns))


def strip_secrets(url: str) -> str:
    """The URL without user, password or query string: safe for messages and saved references."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def describe_qdrant_error(exc: Exception) -> str:
    """One line: the HTTP status and Qdrant's own message, the connection failure, or Edge's message."""
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        return f"HTTP {status}: the server refused the API key (wrong or missing key)"
    if status is not None:
        return f"HTTP {status}: {str(getattr(exc, 'content', b''))[:200]}"
    text = " ".join(str(exc).split())[:300]
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__
