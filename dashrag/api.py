"""The Python entry points: build a tree on a corpus, save it, load it back.

``build`` = validate the whole config → construct (pure) → chunk the corpus and
write it to the store → ``inject_infra`` → ``init_model`` (fit), and hands back the
live retriever. ``build_tree`` is the one build path of every face (``dashrag index``,
the service's build jobs, the page): ``build`` plus the store's retriever record, an
atomic save into the folder and ``close``, reporting its stages to a
:class:`~dashrag.core.progress.Progress`. ``save`` and ``load`` live in
:mod:`dashrag.core.saved_tree` (a retriever's ``save`` method needs them, and core
does not import this module); they are re-exported here.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_as
from dashrag.core.infra import Infra
from dashrag.core.persistence import read_manifest, read_pending_manifest, save_lock
from dashrag.core.progress import Progress, no_progress
from dashrag.core.retriever import Retriever
from dashrag.core.saved_tree import discard_unpublished_store, load, save, store_filename
from dashrag.core.shared_files import file_sha256
from dashrag.documents.changes import UpdateReport
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import SourceDocument
from dashrag.errors import ConfigError, CorpusError, PersistenceError
from dashrag.presets import load_preset
from dashrag.store.sqlite_reader import sqlite_url

if TYPE_CHECKING:  # a folder's converters and settings load when a sync runs, not with `import dashrag`
    from dashrag.documents.converters.result import ReadLimits
    from dashrag.documents.sync import SyncPlan

DEFAULT_CHUNKER: dict[str, Any] = {  # cuts a text without pages or headings as RecursiveCharacterChunker would
    "component": "StructureChunker",
    "params": {"chunk_size": 2000, "chunk_overlap": 200},
}


def _write_sqlite_store(folder: Path, corpus: Corpus, chunk_set: ChunkSet) -> str:
    """The store for this corpus in ``folder``: reused if present, else written to a temp file and renamed in."""
    from dashrag.store.store import write_store_file  # SQLAlchemy: only building writes a store

    return write_store_file(folder / store_filename(chunk_set.fingerprint), corpus.documents, chunk_set.chunks,
                            chunk_set.fingerprint)


def _check_external_store(store_url: str, corpus: Corpus, chunk_set: ChunkSet) -> None:
    """A store named by URL: filled with this corpus when empty, refused when it holds another."""
    from dashrag.store.store import Store

    store = Store(store_url)
    try:
        if store.is_empty():
            store.write_corpus(corpus.documents, chunk_set.chunks, chunk_set.fingerprint)
        elif store.read_chunk_set().fingerprint != chunk_set.fingerprint:
            raise PersistenceError(f"the store {store.display_url} holds another corpus")
    finally:
        store.close()


def chunk_corpus(corpus: Corpus, chunker: dict | None) -> ChunkSet:
    """The corpus cut by ``chunker`` (default: structure-aware, 2000/200 characters)."""
    from dashrag.chunkers.base import Chunker  # building chunks; loading a saved tree does not

    return ChunkSet(build_as(chunker or DEFAULT_CHUNKER, Chunker, "chunker").chunk(corpus.documents))


def chunker_config(chunker: dict | None) -> dict[str, Any]:
    """The chunker's whole config (defaults filled in), as a saved tree records it: an update cuts new
    documents with it (docs/updating.md)."""
    return build_as(chunker or DEFAULT_CHUNKER, ConfigObject, "chunker").to_config()


def prepare_corpus(
    corpus: Corpus | str | Path,
    workdir: str | Path,
    chunker: dict | None = None,
    store_url: str | None = None,
    cache_dir: str | Path | None = None,
    overwrite: bool = False,
) -> Infra:
    """Chunk the corpus, write it to the store, and return the infrastructure a tree runs on.

    Caches (embeddings) go in ``cache_dir``, default ``workdir``: point several builds
    at one cache folder and a corpus is embedded once per model, whatever the tree.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if not isinstance(corpus, Corpus):
        corpus = Corpus.from_path(corpus)
    chunk_set = chunk_corpus(corpus, chunker)
    if store_url is None:
        store_url = _write_sqlite_store(workdir, corpus, chunk_set)
    else:
        _check_external_store(store_url, corpus, chunk_set)
    return Infra(env_path=Path(cache_dir) if cache_dir else workdir, chunks=chunk_set, store_url=store_url,
                 workdir=workdir, overwrite=overwrite, chunker=chunker_config(chunker))


def build(
    config: dict | str | Retriever,
    corpus: Corpus | str | Path,
    workdir: str | Path,
    chunker: dict | None = None,
    store_url: str | None = None,
    cache_dir: str | Path | None = None,
    overwrite: bool = False,
    progress: Progress = no_progress,
) -> Retriever:
    """Validate and build ``config`` (a JSON tree, or the name of a preset in components/ such as
    ``"keyword"``), fit it on ``corpus``; the store goes in ``workdir``, caches in ``cache_dir``
    (default: ``workdir``). ``overwrite`` lets engine-backed indexes replace a collection or
    table that holds something else (never done otherwise); ``progress`` hears the fitting nodes' batches."""
    root = construct_tree(config)
    progress("chunking and storing")
    infra = replace(prepare_corpus(corpus, workdir, chunker, store_url, cache_dir, overwrite), progress=progress)
    progress("fitting")
    _fit(root, infra)
    return root


def construct_tree(config: dict | str | Retriever) -> Retriever:
    """The tree's root, validated and constructed (pure, no I/O): from a JSON config, a preset name in
    components/, or a retriever already built (taken as it is). A face calls this first, so every config
    problem is reported before any work, and passes the result on: a build validates once."""
    if isinstance(config, str):
        config = load_preset(config)
    if isinstance(config, dict):
        return build_as(config, Retriever, "retriever")
    if isinstance(config, Retriever):
        return config
    raise ConfigError(f"build takes a config dict, a preset name or a built retriever, not {type(config).__name__}")


def _fit(root: Retriever, infra: Infra) -> None:
    root.inject_infra(infra)
    try:
        root.init_model()
    except BaseException:
        root.close()  # a failed build releases what it opened (engine connections, embedded storage locks)
        raise


@dataclass(frozen=True)
class BuildReport:
    """What ``build_tree`` did: the saved folder, how much it indexed, how long the build took (seconds,
    from reading the corpus to the saved folder), and the id of the tree's record in its store."""

    folder: Path
    documents: int
    chunks: int
    seconds: float
    record_id: int


def build_tree(
    config: dict | str | Retriever,
    corpus: Corpus | str | Path,
    out: str | Path,
    *,
    name: str | None = None,
    chunker: dict | None = None,
    store_url: str | None = None,
    cache_dir: str | Path | None = None,
    overwrite: bool = False,
    progress: Progress = no_progress,
    source_folder: str | Path | None = None,
) -> BuildReport:
    """Build ``config`` on ``corpus`` and save it in ``out``: the one build of every face.

    All or nothing: the corpus goes into a temporary store in ``out``, the tree is fitted on it, its
    retriever record (``name``, default the root component) is written into that store, and only
    then does the save switch ``out``'s manifest (atomically, under the folder's save lock), so a kill
    at any moment leaves the previous tree (or none) loadable, and a failure leaves no file of this
    build behind (nor ``out`` itself when the build created it). ``progress`` hears each stage; raising
    from it stops the build (a cancel). ``source_folder``: the folder of files ``corpus`` was read from, as the
    face wants it recorded in the manifest (the CLI: absolute; the service: relative to its data root), so a
    later sync that names no folder reads it (:func:`source_folder_of`, docs/documents.md).
    """
    start = time.perf_counter()
    root = construct_tree(config)
    missing = root.missing_module_to_save()
    if missing is not None:  # the faces name its extra (extras.missing_extra), as when the save imports it
        raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)
    if not isinstance(corpus, Corpus):
        progress("reading the corpus")
        corpus = Corpus.from_path(corpus)
    progress("chunking", 0, len(corpus))
    chunk_set = chunk_corpus(corpus, chunker)
    progress("chunking", len(corpus), len(corpus))
    out = Path(out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with save_lock(out):  # the temporary store lives under the lock: a save that finds one, finds it abandoned
            record_id = _build_into(root, corpus, chunk_set, out, name, chunker, store_url, cache_dir, overwrite,
                                    progress, None if source_folder is None else str(source_folder))
    except BaseException:
        if created:  # a failed first build leaves no folder (its caches, its lock) where there was none
            shutil.rmtree(out, ignore_errors=True)
        raise
    return BuildReport(out, len(corpus), len(chunk_set), time.perf_counter() - start, record_id)


def _build_into(root: Retriever, corpus: Corpus, chunk_set: ChunkSet, out: Path, name: str | None,
                chunker: dict | None, store_url: str | None, cache_dir: str | Path | None, overwrite: bool,
                progress: Progress, source_folder: str | None) -> int:
    """build_tree's writing part: the temporary store, the fit, the record, the save."""
    from dashrag.store.store import Store  # SQLAlchemy: only building writes a store

    progress("storing", 0, len(chunk_set))
    temporary: Path | None = None
    if store_url is None:
        from dashrag.store.store import write_temporary_store

        temporary = write_temporary_store(out, corpus.documents, chunk_set.chunks, chunk_set.fingerprint)
        store_url = sqlite_url(temporary)
    else:
        _check_external_store(store_url, corpus, chunk_set)
    try:
        progress("fitting", 0, len(chunk_set))
        infra = Infra(env_path=Path(cache_dir) if cache_dir else out, chunks=chunk_set, store_url=store_url,
                      workdir=out, overwrite=overwrite, progress=progress, chunker=chunker_config(chunker),
                      source_folder=source_folder)
        _fit(root, infra)
        try:
            record_store = Store(store_url)
            try:
                record_id = record_store.add_retriever_record(name or root.component_name, root.to_config(),
                                                              str(out.resolve()), chunk_set.fingerprint)
            finally:
                record_store.close()
            progress("saving")
            save(root, out)
        finally:
            root.close()  # engine connections, embedded Qdrant's storage lock
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)  # save copied it in under its corpus's name
    return record_id


def _documents_to_add(add: Corpus | str | Path | Iterable[SourceDocument] | None) -> list[SourceDocument]:
    if add is None:
        return []
    if isinstance(add, (str, Path)):
        return list(Corpus.from_path(add).documents)
    return list(add)


def update_tree(
    folder: str | Path,
    *,
    add: Corpus | str | Path | Iterable[SourceDocument] | None = None,
    remove: Iterable[str] = (),
    chunker: dict | None = None,
    progress: Progress = no_progress,
    store_url: str | None = None,
    purge: bool = False,
) -> UpdateReport:
    """Change the saved tree in ``folder`` in place: add ``add`` (a Corpus, a corpus path, or
    SourceDocuments; an id already in the tree is replaced when its content changed, skipped when
    identical) and remove the documents ``remove``. All or nothing: the folder switches from the old
    tree to the new one atomically (a crash leaves one or the other, readers get one or the other),
    and two updates of one folder run one after the other (its save lock). A bad request (an unknown
    id, a document without an id, another chunker, a folder that holds no saved tree) changes nothing.

    ``store_url``: the store of a tree indexed with one (``--store postgresql://...``), as ``load`` takes
    it. Its change is committed in one transaction between the new snapshot and the manifest's switch,
    and the whole update holds the store's writer lock, so two writers of one database run one after
    the other (store/external_change.py, docs/updating.md).

    ``purge``: no text of a removed or replaced document stays in the folder once the update is published (the
    store is written whole, ~2 s a GB of store); by default a removed document of the store's base is hidden,
    its text left there until the store is next written whole (docs/updating.md, "Removed text")."""
    folder = Path(folder)
    documents = _documents_to_add(add)
    removing = [str(i) for i in remove]
    read_manifest(folder)  # a folder that holds no saved tree: an error before the lock creates anything
    with save_lock(folder), _store_writer_lock(store_url):
        progress("loading")
        root = load(folder, store_url)
        try:
            progress("updating", 0, len(documents) + len(removing))
            outcome = root.update_documents(documents, removing, chunker, purge)
            if outcome.changed or _rolled_forward(folder, root):
                progress("saving")
                try:
                    save(root, folder)
                except BaseException:
                    discard_unpublished_store(root, folder)  # a full disk leaves nothing of the update
                    raise
                root.release_replaced()  # published: the old engine objects go (docs/updating.md)
        finally:
            root.close()
    progress("updating", len(documents) + len(removing), len(documents) + len(removing))
    return outcome


update = update_tree  # dashrag.update(folder, add=..., remove=...)


@contextmanager
def _store_writer_lock(store_url: str | None) -> Iterator[None]:
    """An external store's writer lock (``store/external_change.writer_lock``); a tree whose store is its folder's
    SQLite file (no ``store_url``) needs none, nor the import of SQLAlchemy it brings before the load (the update
    imports it later, beside the model's start-up: ``core/updating.py``)."""
    if store_url is None:
        yield
        return
    from dashrag.store.external_change import writer_lock

    with writer_lock(store_url):
        yield


def _rolled_forward(folder: Path, root: Retriever) -> bool:
    """Whether ``root`` was loaded from the pending manifest of an update killed between its store's commit
    and the switch (store/external_change.py): an update that changes nothing then still publishes it."""
    pending = read_pending_manifest(folder)
    return pending is not None and pending["corpus_fingerprint"] == root.require_infra().chunks.fingerprint


@dataclass(frozen=True)
class SyncReport:
    """What a sync found (``plan``), what the update did (``update``; None on a dry run) and the files left out."""

    plan: SyncPlan
    update: UpdateReport | None
    skipped: tuple[str, ...]
    failed: tuple[str, ...]

    def counts(self) -> dict[str, int]:
        """What the sync did, as every face reports it: added, replaced, removed, unchanged (a file whose content
        was the same, touched or not) and failed (left out; a changed one kept as it was)."""
        done = self.update or UpdateReport()
        return {"added": len(done.added), "replaced": len(done.replaced), "removed": len(done.removed),
                "unchanged": len(self.plan.unchanged) + len(done.skipped), "failed": len(self.failed)}


def sync_tree(tree: str | Path, folder: str | Path, *, dry_run: bool = False, strict: bool = False,
              limits: ReadLimits | None = None, follow_symlinks: bool = False,
              progress: Progress = no_progress, store_url: str | None = None, purge: bool = False) -> SyncReport:
    """Bring the saved tree in ``tree`` in line with ``folder`` (docs/documents.md): files new since the last
    sync are added, changed ones (by content hash) replaced, gone ones removed, through :func:`update_tree`,
    so it is as exact and as atomic as any update. Only new and changed files are converted. A file that
    cannot be read is left out (and, if it was in the tree, kept as it was); ``strict``: an error instead,
    nothing written. ``dry_run``: the plan only, nothing read or written. ``store_url``, ``purge``: as
    ``update_tree``."""
    from dashrag.documents.converters.result import ReadLimits
    from dashrag.documents.corpus import SIDECAR_NAME, read_sidecar
    from dashrag.documents.folder import files_of_folder, read_files
    from dashrag.documents.sync import FileState, plan_sync

    tree, folder = Path(tree), Path(folder)
    if not folder.is_dir():
        raise CorpusError(f"{folder}: no such folder")
    read_manifest(tree)  # a folder that holds no saved tree: an error before any file is read
    sidecar = read_sidecar(folder / SIDECAR_NAME)
    progress("hashing the folder")
    files, outcome = files_of_folder(folder, follow_symlinks, SIDECAR_NAME)
    by_path = {f.relative_to(folder).as_posix(): f for f in files}
    found = {}
    for rel, path in by_path.items():
        try:
            found[rel] = FileState(file_sha256(path), sidecar.get(rel, {}))
        except OSError as exc:  # unreadable now: left out like any bad file (a stored version is kept)
            outcome.failed.append(f"{path}: cannot be read ({exc.strerror})")
    plan = plan_sync(_stored_metadata(tree, store_url), found)
    if dry_run:
        return SyncReport(plan, None, tuple(outcome.skipped), ())
    progress("reading files", 0, len(plan.to_read))
    read_files(folder, [by_path[rel] for rel in plan.to_read], limits or ReadLimits(), sidecar, outcome)
    if strict:
        outcome.refuse_failures()
    nothing_to_do = not outcome.documents and not plan.removed
    report = UpdateReport() if nothing_to_do else update_tree(tree, add=outcome.documents, remove=plan.removed,
                                                               progress=progress, store_url=store_url, purge=purge)
    return SyncReport(plan, report, tuple(outcome.skipped), tuple(outcome.failed))


def source_folder_of(tree: str | Path) -> str | None:
    """The folder of files the saved tree in ``tree`` was built from, as its build recorded it (the manifest's
    ``source_folder``: absolute from the CLI, relative to the data root from the service); None when it records
    none (built from JSONL, from uploads, or before the field existed)."""
    return read_manifest(Path(tree)).get("source_folder")


def _stored_metadata(tree: Path, store_url: str | None) -> dict[str, Any]:
    """The saved tree's documents' metadata by id (what a sync compares the folder with)."""
    root = load(tree, store_url)
    try:
        chunks = root.require_infra().chunks
        return dict(zip(chunks.document_ids, chunks.document_metadata))
    finally:
        root.close()


__all__ = ["BuildReport", "SyncReport", "UpdateReport", "build", "build_tree", "chunk_corpus", "construct_tree", "load",
           "prepare_corpus", "save", "source_folder_of", "sync_tree", "update", "update_tree"]
