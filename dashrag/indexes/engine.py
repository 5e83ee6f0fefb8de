"""What the engine-backed indexes (Qdrant, PostgreSQL; dense vectors and BM25 keyword weights) share.

* **Params**: the name of the collection / table (default: derived from what it holds, so the same node over
  the same corpus and model finds its own object again); ``shards`` / ``shard``
  (this node holds only the chunks whose id modulo ``shards`` is ``shard``, for a
  ParallelRetriever over several servers, docs/engines.md).
* **Ownership**: an engine object holds a *record* of what it holds (corpus
  fingerprint, embedding, metric, dimension, shard, point count). Building over an
  object whose record matches reuses it without writing anything; over any other
  existing object it is an error unless the user asked for ``--overwrite``.
  Nothing is ever dropped or replaced otherwise.
* **Saved reference**: a saved tree holds ``index.json`` (engine, URL without secrets,
  object name, the record) instead of the vectors; loading checks the object exists
  and its record and dimension are the tree's, with an error naming engine and object.
* **Restriction**: translated to the engine's own filter (``EngineFilter``), applied
  inside the search: documents → ``source_id`` in a list, a metadata filter → the
  engine's own conditions over the ``filterable`` payload (``dashrag/filters/payload.py``;
  SQL for PostgreSQL, a payload filter for Qdrant), an opaque predicate → the list of
  allowed chunk ids. Where the engine cannot say a filter (a Qdrant string range), or the
  object was built before payloads had ``filterable``, the exact list of matching chunk
  ids, computed in process, is sent instead (docs/filters.md).
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

import numpy as np
import scipy.sparse as sp
from pydantic import Field

from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams, Rule
from dashrag.core.persistence import atomic_write_json, load_json
from dashrag.core.restriction import Restriction
from dashrag.documents.changes import CorpusChange
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.model import Chunk, normalise_categories
from dashrag.errors import DashragError, EngineError, PersistenceError
from dashrag.filters import Filter
from dashrag.filters.evaluate import check_types
from dashrag.filters.payload import filter_payload
from dashrag.indexes.base import IndexIdentity

REFERENCE_FILE = "index.json"
UPLOAD_BATCH = 512  # points / rows written per request


def _shard_in_range(params: Any) -> str | None:
    if params.shard >= params.shards:
        return f"shard ({params.shard}) must be < shards ({params.shards})"
    return None


class EngineParams(ComponentParams):
    """What every engine-backed index takes (vector or keyword): which shard of the corpus it holds."""

    shards: int = Field(1, ge=1, le=1024, description=(
        "Split the corpus into this many shards by chunk id (one per node)."))
    shard: int = Field(0, ge=0, description="Which shard this node holds: chunks whose id modulo `shards` is this.")

    RULES = (Rule("lt", ("shard", "shards"), "shard must be below shards", _shard_in_range),)


@dataclass(frozen=True)
class EngineFilter:
    """A restriction in the terms an engine filters on (any part None: no condition of that sort)."""

    source_ids: list[str] | None = None
    metadata: Filter | None = None
    chunk_ids: list[int] | None = None
    matching_ids: Callable[[], list[int]] | None = None  # with ``metadata``: every allowed chunk, exactly

    def without_metadata(self) -> EngineFilter:
        """The same restriction with the metadata filter sent as the list of the chunks it allows."""
        assert self.matching_ids is not None
        return EngineFilter(chunk_ids=self.matching_ids())


def engine_filter(restriction: Restriction | None, chunks: ChunkSet) -> EngineFilter | None:
    """The restriction as conditions the engine evaluates inside its search."""
    if restriction is None:
        return None
    source_ids = sorted(restriction.documents) if restriction.documents is not None else None

    def matching_ids() -> list[int]:
        return chunks.ids[np.flatnonzero(restriction.row_mask(chunks))].tolist()

    if restriction.predicate is not None:
        return EngineFilter(chunk_ids=matching_ids())
    if restriction.filter is None:
        return EngineFilter(source_ids=source_ids)
    check_types(restriction.filter, chunks.metadata_columns)  # the corpus's type errors, before the engine runs
    return EngineFilter(source_ids=source_ids, metadata=restriction.filter, matching_ids=matching_ids)


def object_name(prefix: str, record: dict[str, Any]) -> str:
    """Default collection / table name: the same record (corpus, model, metric, shard, index structure)
    gives the same name, any difference another one."""
    key = json.dumps({k: v for k, v in record.items() if k != "count"}, sort_keys=True)
    return f"{prefix}_{str(record['corpus_fingerprint'])[:12]}_{hashlib.sha256(key.encode()).hexdigest()[:12]}"


P = TypeVar("P", bound=EngineParams)


class EngineIndex(ConfigObject[P], Generic[P]):
    """Shared logic of the engine indexes, vector and keyword: ownership record, overwrite rule, saved
    reference and its checks, shards. A subclass talks to its engine; what it uploads is a matrix with
    one row per chunk (dense vectors, or a sparse matrix of BM25 term weights)."""

    engine_name = "engine"
    object_kind = "object"  # "collection", "table"
    name_prefix = "dashrag"

    @property
    def process_bound(self) -> bool:
        """Whether the index holds files only one process may open at a time (an embedded engine folder): a
        process serving the tree is then the only one that may change it (the service updates it in place)."""
        return False

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._record: dict[str, Any] | None = None
        self._name: str | None = None
        self._rows: np.ndarray | None = None  # the corpus rows this shard holds

    @contextmanager
    def engine_errors(self, action: str) -> Iterator[None]:
        """Any failure of the engine's client becomes an EngineError naming the engine, the object and the
        action (the clients raise many kinds: HTTP, connection, SQL, local-mode ValueError)."""
        try:
            yield
        except DashragError:
            raise
        except Exception as exc:
            raise EngineError(f"{self.where()}: {action} failed: {self.describe_error(exc)}") from None

    def describe_error(self, exc: Exception) -> str:
        """The client's error in one line, with no secret in it."""
        raise NotImplementedError

    # -- what this node holds --------------------------------------------------
    def shard_rows(self) -> np.ndarray:
        if self._rows is None:
            ids = self.require_infra().chunks.ids
            self._rows = np.flatnonzero(ids % self.params.shards == self.params.shard)
        return self._rows

    def _update(self, change: CorpusChange) -> None:
        """The corpus changed (docs/updating.md): this shard's rows are those of the new chunk set. The
        parent node then adds the whole new matrix, under the new corpus's record: a new object for a
        default name (the old tree's object is untouched until the update is published)."""
        self._rows = None
        self._replaced = self._name

    def kept_vectors(self, change: CorpusChange) -> np.ndarray:
        """An engine finds vectors by chunk id; the kept chunks are the new corpus's first rows, ids unchanged.
        A shard holds only its own chunks' vectors: the other shards' rows stay zero, and :meth:`add` uploads
        only this shard's rows of the new matrix, so they are never read."""
        rows = np.arange(len(change.kept_rows), dtype=np.int64)
        if self.params.shards == 1:
            return self.vectors_for(rows)  # type: ignore[attr-defined]
        mine = rows[change.new.ids[rows] % self.params.shards == self.params.shard]
        kept = np.zeros((len(rows), self.dimension), dtype=np.float32)
        kept[mine] = self.vectors_for(mine)  # type: ignore[attr-defined]
        return kept

    def _release_replaced(self) -> None:
        """Drop the object the tree searched before the update (published by now): the removed documents'
        text must not stay behind on the engine. A configured name that was reused is not dropped."""
        old, self._replaced = getattr(self, "_replaced", None), None
        if old is None or old == self._name:
            return
        current, self._name = self._name, old
        try:
            if self.exists():
                self.drop()
        finally:
            self._name = current

    def record_for(self, identity: IndexIdentity) -> dict[str, Any]:
        return {**identity.to_json(), "shards": self.params.shards, "shard": self.params.shard,
                "structure": self.structure(), "count": int(len(self.shard_rows()))}

    def structure(self) -> dict[str, Any]:
        """What was built inside the engine beyond the vectors (an HNSW graph and its parameters): part of
        the record, so an object built without the index a node asks for is never taken for its own."""
        return {}

    @property
    def name(self) -> str:
        if self._name is None:
            raise EngineError(f"{self.engine_name}: the index of this node is not built or loaded yet")
        return self._name

    def configured_name(self) -> str | None:
        raise NotImplementedError

    def _choose_name(self, identity: IndexIdentity) -> str:
        return self.configured_name() or object_name(self.name_prefix, self.record_for(identity))

    def where(self) -> str:
        """``Qdrant collection 'x' at http://host:6333``: how errors name the object."""
        return f"{self.engine_name} {self.object_kind} {self._name!r} at {self.display_location()}"

    @property
    def dimension(self) -> int:
        if self._record is None:
            raise EngineError(f"{self.engine_name}: the index of this node is not built or loaded yet")
        return int(self._record["dimension"])

    # -- building --------------------------------------------------------------
    def add(self, vectors: Any, identity: IndexIdentity) -> None:
        """Hold ``vectors`` (one row per chunk, in chunk-id order: a dense array or a scipy sparse matrix)."""
        self._name = self._choose_name(identity)
        wanted = self.record_for(identity)
        existing = self.read_record()
        if existing is not None and existing == wanted and self.count() == wanted["count"]:
            self._record = wanted  # the same vectors are already there: reuse, write nothing
            return
        if self.exists():
            if not self.require_infra().overwrite:
                what = "holds another index" if existing is not None else "exists and was not written by dashrag"
                raise EngineError(f"{self.where()} {what} ({describe_difference(existing, wanted)}); "
                                  "nothing was changed. Pass --overwrite (overwrite=True) to replace it, "
                                  "or name another one")
            self.drop()
        rows = self.shard_rows()
        self.create(identity.dimension, identity.metric)
        self.upload(rows, vectors[rows] if sp.issparse(vectors) else np.asarray(vectors)[rows])
        self.finish_build(wanted)
        self._record = wanted

    # -- saved reference -------------------------------------------------------
    def save_into(self, folder: Path) -> None:
        atomic_write_json(folder / REFERENCE_FILE, {"engine": self.engine_name, "location": self.display_location(),
                                                    self.object_kind: self.name, "record": self._record,
                                                    **self.reference_extra()})

    def load_from(self, folder: Path, identity: IndexIdentity) -> None:
        reference = load_json(folder / REFERENCE_FILE)
        if not isinstance(reference, dict) or reference.get("engine") != self.engine_name:
            raise PersistenceError(
                f"{folder / REFERENCE_FILE}: not a reference to a {self.engine_name} {self.object_kind}")
        self._name = str(reference.get(self.object_kind))
        wanted = self.record_for(identity)
        if reference.get("record") != wanted:
            raise PersistenceError(f"{folder / REFERENCE_FILE}: the reference does not match this tree's corpus, "
                                   f"model or shard ({describe_difference(reference.get('record'), wanted)})")
        self.check_object(wanted, identity)
        self.check_unchanged(reference)
        self._record = wanted

    def check_object(self, wanted: dict[str, Any], identity: IndexIdentity) -> None:
        """Raise EngineError unless the engine object exists and holds what the loaded tree searches: its record
        is ``wanted``, its layout the tree's and it holds ``wanted["count"]`` points."""
        self.check_recorded(wanted, identity)
        self.check_count(wanted["count"])

    def check_recorded(self, wanted: dict[str, Any], identity: IndexIdentity) -> None:
        """The object exists, its record is ``wanted`` and its layout the tree's."""
        if not self.exists():
            raise EngineError(f"{self.where()} does not exist (dropped, or another server); rebuild the tree")
        existing = self.read_record()
        if existing != wanted:
            raise EngineError(f"{self.where()} holds another index than the saved tree "
                              f"({describe_difference(existing, wanted)}); rebuild with --overwrite")
        self.check_layout(identity)

    def check_count(self, expected: int) -> None:
        count = self.count()
        if count != expected:
            raise EngineError(f"{self.where()} holds {count} vectors, the tree was saved with {expected} "
                              "(edited since); rebuild with --overwrite")

    # -- for subclasses ----------------------------------------------------------
    def display_location(self) -> str:
        raise NotImplementedError

    def exists(self) -> bool:
        raise NotImplementedError

    def read_record(self) -> dict[str, Any] | None:
        raise NotImplementedError

    def count(self) -> int:
        raise NotImplementedError

    def actual_dimension(self) -> int:
        raise NotImplementedError

    def check_layout(self, identity: IndexIdentity) -> None:
        """Raise EngineError when the object cannot hold what the tree searches (vectors of another
        dimension; a keyword index overrides it)."""
        actual = self.actual_dimension()
        if actual != identity.dimension:
            raise EngineError(f"{self.where()} holds {actual}-dimensional vectors, the tree's model gives "
                              f"{identity.dimension}")

    def drop(self) -> None:
        raise NotImplementedError

    def create(self, dimension: int, metric: str) -> None:
        raise NotImplementedError

    def upload(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        raise NotImplementedError

    def finish_build(self, record: dict[str, Any]) -> None:
        """Write the record (and build the ANN index) once every vector is in."""
        raise NotImplementedError

    def reference_extra(self) -> dict[str, Any]:
        return {}

    def check_unchanged(self, reference: dict[str, Any]) -> None:
        """Raise EngineError when the object was edited since the reference was written."""


def describe_difference(found: dict[str, Any] | None, wanted: dict[str, Any]) -> str:
    if found is None:
        return "no dashrag record"
    diffs = [f"{k}: {found.get(k)!r} instead of {wanted[k]!r}" for k in wanted if found.get(k) != wanted[k]]
    shorten = {"corpus_fingerprint", "embedding_key"}
    return "; ".join(d if d.split(":")[0] not in shorten else d[:90] for d in diffs) or "same record"


def payloads_of(chunks: ChunkSet, rows: Iterable[int]) -> list[dict[str, Any]]:
    """What an engine stores beside each of these rows' vectors: enough to filter and to answer without the store
    (their texts read from the store in one batch)."""
    return [_payload(chunk) for chunk in chunks.chunks_at(rows)]


def _payload(chunk: Chunk) -> dict[str, Any]:
    return {"chunk_id": int(chunk.id), "source_id": chunk.document_id, "text": chunk.text,
            "categories": {k: list(v) for k, v in normalise_categories(chunk.all_metadata).items()},
            "metadata": dict(chunk.all_metadata), "filterable": filter_payload(chunk.all_metadata)}
