"""What ``POST /retrieve`` searches: collections, one small protocol, several kinds.

A :class:`Collection` has a ``name``, says whether it ``exists()`` now, and answers
``search(query, limit)`` with :class:`RetrievedChunk` s whose ``retrieval_score`` is
calibrated to [0, 1] (higher is better; ``None`` when the collection cannot score a
chunk, which the floor counts as 0.0). A collection that can also explain its answer
implements ``search_traced(query, limit) -> (chunks, trace node)``.

The built-in kind is :class:`TreeCollection`: a saved-tree folder under ``--trees``,
loaded once and shared by every request (a query never writes it). Other kinds (a
Qdrant collection served directly: ``qdrant_collections.py``) are added with
:meth:`CollectionRegistry.add` and are searched the same way.

A tree whose engine failed when it was loaded (unreachable server, refused key,
collection of another dimension, table edited behind its back: an ``EngineError``) is
registered as an :class:`UnavailableCollection`: a request for it is a 503 whose body
names the engine and the object, not a 404 (the tree exists; its engine does not answer).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dashrag.api import load
from dashrag.core.observe import unobserved
from dashrag.core.persistence import MANIFEST_NAME, read_manifest
from dashrag.core.restriction import Restriction
from dashrag.core.retriever import Retriever
from dashrag.documents.model import ScoredChunk
from dashrag.errors import EngineError, PersistenceError
from dashrag.service.calibration import Calibration, calibrate_saved
from dashrag.store.store import Store, read_only_url

logger = logging.getLogger(__name__)

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # a folder name; never hidden, never a path


@dataclass(frozen=True)
class RetrievedChunk:
    chunk_id: str
    text: str
    source_id: str | None
    collection_name: str
    retrieval_score: float | None
    metadata: Mapping[str, Any] = field(default_factory=dict)  # the document's


@runtime_checkable
class Collection(Protocol):
    name: str

    def exists(self) -> bool: ...

    def search(self, query: str, limit: int, restriction: Restriction | None = None) -> list[RetrievedChunk]: ...


class TreeCollection:
    """A saved tree (a folder written by ``dashrag index`` / ``POST /trees``) served as a collection."""

    def __init__(self, folder: Path, store_url: str | None = None):
        self.folder = Path(folder)
        self.name = self.folder.name
        self.manifest_mtime = (self.folder / MANIFEST_NAME).stat().st_mtime_ns  # before reading: a newer save shows
        self.manifest = read_manifest(self.folder)
        self.retriever: Retriever = load(self.folder, store_url)
        with unobserved():  # its sample queries are no user's: not exported as spans (docs/otel.md)
            self.calibration: Calibration = calibrate_saved(self.folder, self.manifest, self.retriever)

    def exists(self) -> bool:
        return (self.folder / MANIFEST_NAME).is_file()

    def search(self, query: str, limit: int, restriction: Restriction | None = None) -> list[RetrievedChunk]:
        return self.search_traced(query, limit, restriction)[0]

    def search_traced(self, query: str, limit: int,
                      restriction: Restriction | None = None) -> tuple[list[RetrievedChunk], dict]:
        chunks, trace = self.retriever.retrieve(query, top_k=limit, restriction=restriction)
        return [self._retrieved(c) for c in chunks[:limit]], trace

    def _retrieved(self, scored: ScoredChunk) -> RetrievedChunk:
        return RetrievedChunk(chunk_id=str(scored.chunk.id), text=scored.chunk.text, source_id=scored.document_id,
                              collection_name=self.name, retrieval_score=self.calibration(scored.score),
                              metadata=scored.chunk.all_metadata)

    def fields(self) -> list[dict[str, Any]]:
        """The metadata fields of the tree's documents (``filters/fields.py``), from the loaded chunk set."""
        from dashrag.filters.fields import field_summaries

        chunks = self.retriever.require_infra().chunks
        return field_summaries(chunks.document_metadata, chunk_fields=chunks.fields_by_document())

    def filter_warnings(self, restriction: Restriction | None) -> list[str]:
        """The filter's fields that no document of this tree has (``Restriction.warnings``)."""
        return [] if restriction is None else restriction.warnings(self.retriever.require_infra().chunks)

    def query(self, query: str, top_k: int | None, filters: Any = None) -> tuple[Sequence[ScoredChunk], dict]:
        """The tree's own answer (native scores), for ``POST /trees/{name}/query``."""
        chunks, trace = self.retriever.retrieve(query, top_k=top_k, filters=filters)
        return list(chunks), trace

    def documents(self, offset: int, limit: int) -> dict[str, Any]:
        """A page of the tree's documents (id, title, metadata, chunk count), read from its store: the listing
        of ``GET /trees/{name}/documents``. Why the store: the chunks hold no title, and a page is a LIMIT."""
        infra = self.retriever.require_infra()
        store = Store(read_only_url(infra.store_url), read_only=True) if infra.store_url else None
        if store is None:  # a tree held in memory only: its chunks are all there is
            ids = infra.chunks.document_ids
            rows = [(d, "", dict(m)) for d, m in zip(ids, infra.chunks.document_metadata)][offset:offset + limit]
            total = len(ids)
        else:
            try:
                total, documents = store.document_page(offset, limit)
            finally:
                store.close()
            rows = [(d.id, d.title, dict(d.metadata)) for d in documents]
        return {"total": total, "offset": offset, "limit": limit,
                "documents": [{"id": d, "title": title, "metadata": metadata,
                               "chunks": infra.chunks.document_size(d)} for d, title, metadata in rows]}

    def info(self) -> dict[str, Any]:
        chunks = self.retriever.require_infra().chunks
        return {"name": self.name, "config": self.manifest["config"],
                "corpus_fingerprint": self.manifest["corpus_fingerprint"], "chunks": len(chunks),
                "documents": len(chunks.document_ids), "saved_at": self.manifest.get("saved_at"),
                "calibration": self.calibration.describe()}


class UnavailableCollection:
    """A collection whose engine failed when it was loaded: every search repeats that error (a 503)."""

    def __init__(self, name: str, error: EngineError):
        self.name = name
        self.error = error

    def exists(self) -> bool:
        return True

    def search(self, query: str, limit: int, restriction: Restriction | None = None) -> list[RetrievedChunk]:
        raise EngineError(f"not loaded: {self.error}")


class CollectionRegistry:
    """The collections the service answers from, by name; swapped under a lock, read without one.

    A reloaded or deleted tree is not closed: requests already running on it finish on
    the old object, which is freed (with its thread pools) when the last one lets go.

    The trees folder is watched on request, not by a thread: at most every ``rescan_seconds``,
    the next lookup stats each tree's manifest (``dashrag.json``, written last and atomically by
    every save) and loads a new tree, reloads one whose manifest changed, and forgets one whose
    manifest is gone. A folder still being written has no manifest yet and is not seen. A folder
    that fails to load is retried only when its manifest changes again.
    """

    def __init__(self, trees_dir: Path | None, rescan_seconds: float = 2.0, stores: Mapping[str, str] | None = None):
        self.trees_dir = Path(trees_dir) if trees_dir is not None else None
        self.stores = dict(stores or {})  # tree name -> the store URL of a tree indexed with --store (settings)
        self.rescan_seconds = rescan_seconds
        self._collections: dict[str, Collection] = {}
        self._lock = threading.Lock()
        self._scan_lock = threading.Lock()
        self._manifests: dict[str, int] = {}  # tree name -> manifest mtime_ns when last loaded (or tried)
        self._scanned_at = float("-inf")  # time.monotonic() of the last look at the folder
        self.load_errors: dict[str, str] = {}

    def load_all(self) -> None:
        for name, mtime in self._manifests_on_disk().items():
            self._try_load(name, mtime)
        self._scanned_at = time.monotonic()

    def refresh(self, force: bool = False) -> None:
        """Bring the trees in line with the folder (see the class); cheap when nothing changed."""
        if self.trees_dir is None or (not force and time.monotonic() - self._scanned_at < self.rescan_seconds):
            return
        if not self._scan_lock.acquire(blocking=force):
            return  # another request is scanning; this one answers from what is loaded
        try:
            on_disk = self._manifests_on_disk()
            for name in [n for n in self._manifests if n not in on_disk]:
                self._manifests.pop(name)
                self.load_errors.pop(name, None)
                self.forget(name)
                logger.info("collection %s removed (its folder has no saved tree any more)", name)
            for name, mtime in on_disk.items():
                if self._manifests.get(name) != mtime:
                    self._try_load(name, mtime)
            self._scanned_at = time.monotonic()
        finally:
            self._scan_lock.release()

    def _manifests_on_disk(self) -> dict[str, int]:
        if self.trees_dir is None or not self.trees_dir.is_dir():
            return {}
        found = {}
        for folder in sorted(self.trees_dir.iterdir()):
            if folder.name.startswith(".") or not re.match(NAME_PATTERN, folder.name):
                continue
            try:
                found[folder.name] = (folder / MANIFEST_NAME).stat().st_mtime_ns
            except OSError:  # no manifest (not a tree, or one being written) or gone meanwhile
                continue
        return found

    def _try_load(self, name: str, mtime: int) -> None:
        self._manifests[name] = mtime  # tried once per manifest version, loaded or not
        try:
            self.load_tree(name)
        except Exception as exc:  # one broken folder must not keep the others from being served
            self.load_errors[name] = str(exc)
            logger.warning("collection %s not loaded: %s", name, exc)
            if isinstance(exc, EngineError):
                self.add(UnavailableCollection(name, exc))

    def folder_of(self, name: str) -> Path:
        if self.trees_dir is None:
            raise LookupError("the service has no trees folder (--trees)")
        return self.trees_dir / name

    def store_of(self, name: str) -> str | None:
        """The store URL the settings give the tree ``name`` (None: the store file in its folder)."""
        return self.stores.get(name)

    def load_tree(self, name: str) -> TreeCollection:
        collection = TreeCollection(self.folder_of(name), self.store_of(name))
        self.add(collection)
        self._manifests[name] = collection.manifest_mtime
        self.load_errors.pop(name, None)
        return collection

    def add(self, collection: Collection) -> None:
        with self._lock:
            self._collections = {**self._collections, collection.name: collection}

    def get(self, name: str) -> Collection | None:
        self.refresh()
        collection = self._collections.get(name)
        return collection if collection is not None and collection.exists() else None

    def tree(self, name: str) -> TreeCollection | None:
        collection = self.get(name)
        return collection if isinstance(collection, TreeCollection) else None

    def trees(self) -> list[TreeCollection]:
        self.refresh()
        return [c for _, c in sorted(self._collections.items()) if isinstance(c, TreeCollection) and c.exists()]

    def forget(self, name: str) -> Collection | None:
        with self._lock:
            remaining = dict(self._collections)
            gone = remaining.pop(name, None)
            self._collections = remaining
        return gone

    def close(self) -> None:
        """Close every served tree (its engines' connections, thread pools): at shutdown, when no request runs."""
        with self._lock:
            served, self._collections = self._collections, {}
        for collection in served.values():
            if isinstance(collection, TreeCollection):
                collection.retriever.close()

    def learned_folder_of(self, name: str) -> Path:
        """Where a learn job on the tree ``name`` writes its model, preset and report (docs/finetuning.md): hidden
        beside the trees, never listed or served."""
        return self.folder_of(name).with_name(f".learned-{name}")

    def models_folder_of(self, name: str) -> Path:
        """The model folders the tree ``name``'s config names by path when it was built from a learned preset (a
        copy, so a later learn job or the deletion of the tree it learned from never changes its model)."""
        return self.folder_of(name).with_name(f".models-{name}")

    def delete_tree(self, name: str) -> bool:
        """Remove the tree's folder and its companions (its learned folder, its models folder): each renamed aside
        first, so they vanish at once and together, then forget the tree. A folder that cannot be moved (an
        immutable or read-only trees folder) is a PersistenceError, whatever was moved is put back and the tree
        stays served: it is still on disk, whole."""
        folder = self.folder_of(name)
        if self._collections.get(name) is None and not (folder / MANIFEST_NAME).is_file():
            return False
        moved: list[tuple[Path, Path]] = []
        suffix = uuid.uuid4().hex[:8]
        for index, path in enumerate([folder, self.learned_folder_of(name), self.models_folder_of(name)]):
            if not path.is_dir():
                continue
            trash = path.with_name(f".deleted-{name}-{suffix}-{index}")
            try:
                os.replace(path, trash)
            except OSError as exc:
                for original, aside in reversed(moved):
                    os.replace(aside, original)
                raise PersistenceError(f"tree {name!r} cannot be deleted: {path.name!r} cannot be moved in the "
                                       f"trees folder ({exc.strerror})") from None
            moved.append((path, trash))
        self.forget(name)
        for _, trash in moved:
            shutil.rmtree(trash, ignore_errors=True)
        return True
