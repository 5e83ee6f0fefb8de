"""What the Qdrant indexes (dense vectors, BM25 sparse vectors) share: connection, records, filters, errors.

* **Where**: without ``url``, Qdrant's embedded local mode (qdrant-client runs it in
  this process, storage in a folder): ``path`` relative to the tree's folder, default
  ``qdrant/`` inside it, so the collection travels with the saved tree; ``":memory:"``
  for a throw-away one (cannot be saved). With ``url``, a Qdrant server or cluster
  (sharding and replication are Qdrant's); the API key is a credential *reference*
  (``EnvCredential``), read when connecting, never saved.
* **What**: one collection per distinct node, one point per chunk, id = chunk id,
  payload ``chunk_id``, ``text``, ``source_id`` and ``categories``. What a collection
  holds is recorded in the side collection ``dashrag_records`` (one point per
  collection, id derived from its name).
* **Filters**: the restriction is a payload filter *inside* the search (``source_id`` match
  any, a metadata filter over ``filterable`` (``dashrag/filters/qdrant.py``), or ``has_id``
  for an opaque predicate); every field the corpus's metadata has gets a payload index
  (keyword, float or bool; dates as floats) when the collection is built.

One process at a time may open an embedded folder (Qdrant locks it); within a process
every node on the same folder (dense and keyword alike) shares one client.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import Field

from dashrag.core.params import ComponentSpec, component_field
from dashrag.core.persistence import saved_folder_of
from dashrag.core.restriction import Restriction
from dashrag.errors import PersistenceError
from dashrag.filters.qdrant import PAYLOAD_KEY, PLAIN_FIELD, payload_key, to_qdrant
from dashrag.indexes.engine import EngineFilter, EngineIndex, EngineParams, engine_filter

RECORDS_COLLECTION = "dashrag_records"
MEMORY = ":memory:"


class QdrantConnectionParams(EngineParams):
    url: str | None = Field(None, description=(
        "URL of a Qdrant server or cluster (http://host:6333); empty: Qdrant's embedded local mode."))
    path: str = Field("qdrant", description=(
        "Embedded mode: storage folder, relative to the tree's folder (or absolute); ':memory:' keeps nothing."))
    api_key: ComponentSpec | None = component_field("credential", None, optional=True, description=(
        "Server mode: the API key, as a reference (an environment variable), never the key itself."))
    collection: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]{1,200}$", description=(
        "Collection name (default: derived from what it holds: corpus, model or scoring, shard)."))
    timeout_s: int = Field(10, ge=1, description="Server mode: seconds before a request fails.")


_local_clients: dict[str, list[Any]] = {}  # resolved path → [client, users]
_local_lock = threading.Lock()

Q = TypeVar("Q", bound=QdrantConnectionParams)


class QdrantEngine(EngineIndex[Q], Generic[Q]):
    """An index held in a Qdrant collection; a subclass says what the points carry and how to search them."""

    engine_name = "Qdrant"
    object_kind = "collection"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._client: Any = None
        self._local_key: str | None = None
        self._filterable: bool | None = None

    # -- connection --------------------------------------------------------------
    def _storage(self) -> Path:
        path = Path(self.params.path)
        return path if path.is_absolute() else self.require_infra().folder / path

    def display_location(self) -> str:
        if self.params.url:
            return strip_secrets(self.params.url)
        return "memory" if self.params.path == MEMORY else f"embedded storage {self._storage()}"

    @property
    def client(self) -> Any:
        if self._client is None:
            with self.engine_errors("connect"):
                self._client = self._connect()
        return self._client

    def _connect(self) -> Any:
        if self.params.url:
            key = self.nested["api_key"].resolve() if "api_key" in self.nested else None
            return connect_qdrant(self.params.url, key, self.params.timeout_s)
        if self.params.path == MEMORY:
            return connect_qdrant(MEMORY, None, self.params.timeout_s)
        storage = self._storage()
        storage.mkdir(parents=True, exist_ok=True)
        key = str(storage.resolve())
        with _local_lock:
            entry = _local_clients.get(key)
            if entry is None:
                entry = _local_clients[key] = [connect_qdrant(key, None, self.params.timeout_s), 0]
            entry[1] += 1
        self._local_key = key
        return entry[0]

    def _close(self) -> None:
        if self._client is None:
            return
        if self._local_key is not None:
            with _local_lock:
                entry = _local_clients.get(self._local_key)
                if entry is not None:
                    entry[1] -= 1
                    if entry[1] <= 0:
                        del _local_clients[self._local_key]
                        entry[0].close()
            self._local_key = None
        else:
            self._client.close()
        self._client = None

    def describe_error(self, exc: Exception) -> str:
        return describe_qdrant_error(exc)

    # -- the engine object -------------------------------------------------------
    def configured_name(self) -> str | None:
        return self.params.collection

    def exists(self) -> bool:
        with self.engine_errors("checking the collection"):
            return bool(self.client.collection_exists(self.name))

    def _record_id(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"dashrag-collection:{self.name}"))

    def read_record(self) -> dict[str, Any] | None:
        with self.engine_errors("reading the dashrag record"):
            if not self.client.collection_exists(RECORDS_COLLECTION):
                return None
            found = self.client.retrieve(RECORDS_COLLECTION, ids=[self._record_id()], with_payload=True)
        return {k: v for k, v in found[0].payload.items() if k != "collection"} if found else None

    def count(self) -> int:
        with self.engine_errors("counting points"):
            return int(self.client.count(self.name, exact=True).count)

    def collection_config(self) -> Any:
        with self.engine_errors("reading the collection's configuration"):
            return self.client.get_collection(self.name).config.params

    def drop(self) -> None:
        with self.engine_errors("dropping the collection (--overwrite)"):
            self.client.delete_collection(self.name)
            if self.client.collection_exists(RECORDS_COLLECTION):
                from qdrant_client import models

                self.client.delete(RECORDS_COLLECTION, points_selector=models.PointIdsList(points=[self._record_id()]))

    def finish_build(self, record: dict[str, Any]) -> None:
        from qdrant_client import models

        self.index_payload()
        with self.engine_errors("writing the dashrag record"):
            if not self.client.collection_exists(RECORDS_COLLECTION):
                self.client.create_collection(RECORDS_COLLECTION, vectors_config=models.VectorParams(
                    size=1, distance=models.Distance.DOT))
            self.client.upsert(RECORDS_COLLECTION, wait=True, points=[models.PointStruct(
                id=self._record_id(), vector=[1.0], payload={**record, "collection": self.name})])

    def reference_extra(self) -> dict[str, Any]:
        return {"embedded_path": None if self.params.url else self.params.path}

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
        super().save_into(folder)

    def index_payload(self) -> None:
        """A payload index for every metadata field (and kind of value) that filters may name; on servers only
        (qdrant-client's embedded mode scans every point and warns that payload indexes do nothing there)."""
        from qdrant_client import models

        if not self.params.url:
            return

        schemas = {"string": models.PayloadSchemaType.KEYWORD, "number": models.PayloadSchemaType.FLOAT,
                   "date": models.PayloadSchemaType.FLOAT, "bool": models.PayloadSchemaType.BOOL}
        columns = self.require_infra().chunks.metadata_columns
        keys = {f"{PAYLOAD_KEY}.present": models.PayloadSchemaType.KEYWORD}
        for name in columns.fields:
            if PLAIN_FIELD.match(name):
                for kind in columns.kinds(name):  # one index per key: a key holding two kinds gets the first
                    keys.setdefault(payload_key(name, kind), schemas[kind])
        with self.engine_errors("creating payload indexes"):
            for key, schema in keys.items():
                self.client.create_payload_index(self.name, field_name=key, field_schema=schema, wait=True)

    def holds_filter_payload(self) -> bool:
        """Whether the points carry ``filterable`` (collections built before metadata filters do not)."""
        if self._filterable is None:
            with self.engine_errors("reading a point's payload"):
                points, _ = self.client.scroll(self.name, limit=1, with_payload=[PAYLOAD_KEY], with_vectors=False)
            self._filterable = bool(points) and PAYLOAD_KEY in (points[0].payload or {})
        return self._filterable

    # -- search helpers ------------------------------------------------------------
    def _filter(self, restriction: Restriction | None, chunk_ids: list[int] | None = None) -> Any:
        """The restriction as a payload filter; ``chunk_ids``: only these points (scoring given chunks)."""
        if chunk_ids is not None:
            return qdrant_filter(EngineFilter(chunk_ids=chunk_ids))
        where = engine_filter(restriction, self.require_infra().chunks)
        if where is not None and where.metadata is not None and not self.holds_filter_payload():
            where = where.without_metadata()
        return qdrant_filter(where)


def connect_qdrant(location: str, api_key: str | None, timeout_s: int) -> Any:
    """A client for a server URL, ``:memory:``, or an embedded storage folder (an absolute path)."""
    from qdrant_client import QdrantClient

    if location.startswith(("http://", "https://")):
        return QdrantClient(url=location, api_key=api_key, timeout=timeout_s, prefer_grpc=False,
                            check_compatibility=False)
    if location == MEMORY:
        return QdrantClient(location=MEMORY)
    return QdrantClient(path=location)


def qdrant_filter(where: EngineFilter | None) -> Any:
    """The restriction as a Qdrant payload filter (every condition must hold)."""
    if where is None:
        return None
    from qdrant_client import models

    must: list[Any] = []
    if where.source_ids is not None:
        must.append(models.FieldCondition(key="source_id", match=models.MatchAny(any=list(where.source_ids))))
    if where.metadata is not None:
        condition = to_qdrant(where.metadata)
        if condition is None:  # what Qdrant cannot say: the exact list of the chunks the filter allows
            return qdrant_filter(where.without_metadata())
        must.append(condition)
    if where.chunk_ids is not None:
        must.append(models.HasIdCondition(has_id=list(where.chunk_ids)))
    return models.Filter(must=must) if must else None


def strip_secrets(url: str) -> str:
    """The URL without user, password or query string: safe for messages and saved references."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def describe_qdrant_error(exc: Exception) -> str:
    """One line: the HTTP status and Qdrant's own message, or the connection failure."""
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        return f"HTTP {status}: the server refused the API key (wrong or missing key)"
    if status is not None:
        return f"HTTP {status}: {str(getattr(exc, 'content', b''))[:200]}"
    text = " ".join(str(exc).split())[:300]
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__
