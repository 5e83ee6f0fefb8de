"""QdrantVectorIndex: the dense node's vectors in a Qdrant collection (embedded, or a server / cluster).

* **Where**: without ``url``, Qdrant's embedded local mode (qdrant-client runs it in
  this process, storage in a folder): ``path`` relative to the tree's folder, default
  ``qdrant/`` inside it, so the collection travels with the saved tree; ``":memory:"``
  for a throw-away one (cannot be saved). With ``url``, a Qdrant server or cluster
  (sharding and replication are Qdrant's); the API key is a credential *reference*
  (``EnvCredential``), read when connecting, never saved.
* **What**: one collection per distinct node (name derived from corpus, model, metric
  and shard unless ``collection`` names it), one point per chunk, id = chunk id,
  payload ``chunk_id``, ``text``, ``source_id`` and ``categories``. What it holds is
  recorded in the side collection ``dashrag_records`` (one point per collection).
* **Search**: ``query_points`` with ``exact`` or ``hnsw_ef``; the restriction is a
  payload filter *inside* the search (``source_id`` / ``categories.<name>`` match any,
  or ``has_id`` for an opaque predicate). Scores become the in-process ones (cosine and
  dot as they are, euclidean negated), so the same tree ranks the same way.

Embedded mode searches exactly whatever ``exact`` says (qdrant-client's local mode has
no HNSW); one process at a time may open an embedded folder (Qdrant locks it), and
within a process every node on the same folder shares one client.
"""

from __future__ import annotations

import threading
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from pydantic import Field

from dashrag.core.params import ComponentSpec, component_field
from dashrag.core.persistence import saved_folder_of
from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.errors import DashragError, EngineError, PersistenceError
from dashrag.indexes.base import Hits
from dashrag.indexes.engine import (
    UPLOAD_BATCH,
    EngineFilter,
    EngineIndexParams,
    EngineVectorIndex,
    engine_filter,
    payload_of,
)

RECORDS_COLLECTION = "dashrag_records"
MEMORY = ":memory:"
DISTANCES = {"cosine": "Cosine", "dot": "Dot", "euclidean": "Euclid"}


class QdrantParams(EngineIndexParams):
    url: str | None = Field(None, description=(
        "URL of a Qdrant server or cluster (http://host:6333); empty: Qdrant's embedded local mode."))
    path: str = Field("qdrant", description=(
        "Embedded mode: storage folder, relative to the tree's folder (or absolute); ':memory:' keeps nothing."))
    api_key: ComponentSpec | None = component_field("credential", None, optional=True, description=(
        "Server mode: the API key, as a reference (an environment variable), never the key itself."))
    collection: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]{1,200}$", description=(
        "Collection name (default: derived from corpus, model, metric and shard)."))
    hnsw_ef: int | None = Field(None, ge=1, description="HNSW search breadth (default: the collection's ef_construct).")
    timeout_s: int = Field(10, ge=1, description="Server mode: seconds before a request fails.")


_local_clients: dict[str, list[Any]] = {}  # resolved path → [client, users]
_local_lock = threading.Lock()


@register(kind="vector_index", icon="Database", category="index",
          en=("Qdrant collection", "Chunk vectors in a Qdrant collection: embedded, or a server or cluster."),
          es=("Colección de Qdrant",
              "Vectores de los fragmentos en una colección de Qdrant: embebida, o un servidor o clúster."),
          representation="Qdrant {collection} exact={exact}")
class QdrantVectorIndex(EngineVectorIndex[QdrantParams]):
    engine_name = "Qdrant"
    object_kind = "collection"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._client: Any = None
        self._local_key: str | None = None

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
        from qdrant_client import QdrantClient

        if self.params.url:
            key = self.nested["api_key"].resolve() if "api_key" in self.nested else None
            return QdrantClient(url=self.params.url, api_key=key, timeout=self.params.timeout_s, prefer_grpc=False,
                                check_compatibility=False)
        if self.params.path == MEMORY:
            return QdrantClient(location=MEMORY)
        storage = self._storage()
        storage.mkdir(parents=True, exist_ok=True)
        key = str(storage.resolve())
        with _local_lock:
            entry = _local_clients.get(key)
            if entry is None:
                entry = _local_clients[key] = [QdrantClient(path=key), 0]
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

    @contextmanager
    def engine_errors(self, action: str) -> Iterator[None]:
        """Any failure of the client becomes an EngineError naming Qdrant, the collection and the action."""
        try:
            yield
        except DashragError:
            raise
        except Exception as exc:  # the client raises many kinds (HTTP, connection, local-mode ValueError)
            raise EngineError(f"{self.where()}: {action} failed: {describe_qdrant_error(exc)}") from None

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

    def actual_dimension(self) -> int:
        with self.engine_errors("reading the collection's configuration"):
            vectors = self.client.get_collection(self.name).config.params.vectors
        size = getattr(vectors, "size", None)
        if size is None:
            raise EngineError(f"{self.where()} has named vectors ({sorted(vectors)}), not one unnamed vector per point")
        return int(size)

    def drop(self) -> None:
        with self.engine_errors("dropping the collection (--overwrite)"):
            self.client.delete_collection(self.name)
            if self.client.collection_exists(RECORDS_COLLECTION):
                from qdrant_client import models

                self.client.delete(RECORDS_COLLECTION, points_selector=models.PointIdsList(points=[self._record_id()]))

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

    def finish_build(self, record: dict[str, Any]) -> None:
        from qdrant_client import models

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

    # -- search ------------------------------------------------------------------
    def _filter(self, restriction: Restriction | None) -> Any:
        return qdrant_filter(engine_filter(restriction, self.require_infra().chunks))

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
        sign = -1.0 if self._record and self._record["metric"] == "euclidean" else 1.0
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


def qdrant_filter(where: EngineFilter | None) -> Any:
    """The restriction as a Qdrant payload filter (every condition must hold)."""
    if where is None:
        return None
    from qdrant_client import models

    must: list[Any] = []
    if where.source_ids is not None:
        must.append(models.FieldCondition(key="source_id", match=models.MatchAny(any=list(where.source_ids))))
    for name, values in (where.categories or {}).items():
        must.append(models.FieldCondition(key=f"categories.{name}", match=models.MatchAny(any=list(values))))
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
