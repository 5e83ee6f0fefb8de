"""Saving a fitted tree to a folder and loading it back without refitting.

``save`` copies the SQLite store beside the state (named by the corpus
fingerprint, referenced relatively so the folder can move) and writes one
sub-folder per node through :func:`write_saved_folder` (atomic: the previous save
survives a crash). ``load`` never fits: it reads the config and the corpus from
the saved folder, checks the corpus is the one the tree was built on, and
restores each node's state, children before their parents.

``load`` never writes either: the store is opened read-only, and only a store file
*inside* the saved folder is read unless the caller names a store URL explicitly
(a manifest edited to name another database cannot make a load connect to it); a
load running while another process saves gets the old or the new tree
(:func:`~dashrag.core.persistence.read_consistently`). ``save`` holds the folder's
save lock for the store copy and the snapshot, so concurrent saves serialise.

This lives in core (not in ``dashrag.api``) because ``Retriever.save`` needs it
and core imports no entry point (docs/design.md, import contracts).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dashrag.core.chunk_columns import check_columns_agree, read_chunk_columns, write_chunk_columns
from dashrag.core.collection import young_garbage_only
from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_as
from dashrag.core.infra import Infra
from dashrag.core.persistence import (
    CHUNK_COLUMNS_FOLDER,
    FORMAT_VERSION,
    MANIFEST_NAME,
    PENDING_MANIFEST_NAME,
    atomic_write_json,
    file_stat,
    node_dirname,
    read_consistently,
    read_manifest,
    read_pending_manifest,
    save_lock,
    verify_snapshot,
    write_saved_folder,
)
from dashrag.core.retriever import Retriever
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.fingerprint import ADDITIVE, scheme_of_format
from dashrag.errors import ConfigError, PersistenceError, excerpt
from dashrag.store import segments
from dashrag.store.sqlite_reader import SqliteChunkTexts, read_chunk_set, sqlite_url

if TYPE_CHECKING:
    from dashrag.store.external_change import StoreChange

SQLITE_PREFIX = "sqlite:///"
STORE_FILE_PATTERN = re.compile(r"store-[0-9a-f]{1,64}\.sqlite")


def store_filename(fingerprint: str) -> str:
    return f"store-{fingerprint[:16]}.sqlite"


def saved_format_version(scheme: int) -> int:
    """The format version a save writes for a chunk set fingerprinted under ``scheme``: the current one, or 1 for
    a format-1 folder loaded and saved again unchanged (its fingerprint is still the sequential one that its store,
    its engines' records and its embedding cache are named by; the first update migrates it)."""
    return FORMAT_VERSION if scheme == ADDITIVE else 1


def save(root: ConfigObject, folder: str | Path) -> Path:
    """Save a fitted tree to ``folder`` atomically (the previous save survives a crash), one save
    of the folder at a time (the folder's advisory lock; a second save waits for the first)."""
    folder = Path(folder)
    infra = root.require_infra()
    with save_lock(folder):
        from dashrag.store.store import display_url

        store_ref = display_url(infra.store_url) if infra.store_url else None  # never a password
        placed: Path | None = None  # a store file this save put into the folder
        if infra.store_url and infra.store_url.startswith(SQLITE_PREFIX):
            source = Path(infra.store_url[len(SQLITE_PREFIX):])
            target = folder / store_filename(infra.chunks.fingerprint)
            if source.resolve() != target.resolve():  # replaced: the new store may hold a newer retriever record
                _place_store(source, target)
                placed = target
            store_ref = target.name  # relative: the folder can be moved
        in_folder = store_ref is not None and STORE_FILE_PATTERN.fullmatch(store_ref) is not None
        external = store_ref is not None and not in_folder and infra.store_url is not None \
            and not infra.store_url.startswith(SQLITE_PREFIX)
        base = segments.base_of(folder / store_ref) if in_folder and store_ref else None
        store_stat = _store_stat(folder / store_ref, base) if in_folder and store_ref else None
        kept_stores = {store_ref} | ({base.name} if base is not None else set())  # a delta's base stays

        def write_nodes(snapshot: Path) -> None:
            if in_folder or external:  # what a load that trusts the store's fingerprint maps, not its rows
                write_chunk_columns(infra.chunks, snapshot)
            for path, node in root.iter_nodes():
                node_dir = snapshot / "nodes" / node_dirname(path)
                node_dir.mkdir(parents=True)
                node.save_state(node_dir)

        def stale(path: Path) -> bool:  # another store file, when the manifest names one in the folder
            return in_folder and path.name not in kept_stores and STORE_FILE_PATTERN.fullmatch(path.name) is not None

        try:
            write_saved_folder(folder, write_nodes, {
                "format_version": saved_format_version(infra.chunks.fingerprint_scheme),
                "config": root.to_config(),
                "corpus_fingerprint": infra.chunks.fingerprint,
                "store": store_ref,
                "store_stat": store_stat,  # a load that finds the store file unchanged trusts the fingerprint
                "chunk_columns": CHUNK_COLUMNS_FOLDER if in_folder or external else None,  # ... and maps these
                "chunker": infra.chunker,
                "saved_at": datetime.now(UTC).isoformat(),
                **({"source_folder": infra.source_folder} if infra.source_folder is not None else {}),
            }, stale, None if infra.store_change is None else _committing(folder, infra.store_change))
        except BaseException:
            if placed is not None:
                _remove_unpublished_store(folder, placed)
            raise
        if infra.store_change is not None:  # committed and published: the tree's store holds its chunks
            root.inject_infra(replace(infra, store_change=None))
    return folder


def _committing(folder: Path, change: StoreChange) -> Callable[[dict[str, Any]], None]:
    """What a save of an updated tree on an external store does before it switches the manifest: write the
    new manifest as the pending one, then commit the store's change (store/external_change.py). A commit
    that surely did not happen (the store still holds the old corpus) takes the pending manifest back."""
    def commit(manifest: dict[str, Any]) -> None:
        pending = folder / PENDING_MANIFEST_NAME
        atomic_write_json(pending, manifest)
        try:
            change.commit()
        except BaseException:
            if change.held_fingerprint() == change.old_fingerprint:
                pending.unlink(missing_ok=True)
            raise
    return commit


def _place_store(source: Path, target: Path) -> None:
    """Copy the store into the folder under its final name through a temporary file, which a failure (a full
    disk, an immutable old store of the same name) removes: nothing half-copied stays."""
    from dashrag.store.store import materialize

    tmp = target.with_name(f".{target.name}.tmp")
    try:
        materialize(source, tmp)  # a delta store comes whole: its base is another folder's
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _store_stat(path: Path, base: Path | None) -> list[int]:
    """What a save records of its store file, and a load compares to trust the saved fingerprint: the file's
    :func:`file_stat`, followed by its ``base``'s when it is a delta (``store/segments.py``)."""
    return file_stat(path) + ([] if base is None else file_stat(base))


def _unchanged_store(path: Path, recorded: Any) -> bool:
    """Whether the store file ``path`` (and its base, for a delta) is as the save recorded it."""
    try:
        return isinstance(recorded, list) and _store_stat(path, segments.base_of(path)) == recorded
    except (OSError, PersistenceError):
        return False


def discard_unpublished_store(root: ConfigObject, folder: Path) -> None:
    """After a failed save of an updated tree: its new store file (written beside the old one by the update)
    goes, unless the manifest names it, so a full disk leaves the old tree and nothing of the update."""
    _remove_unpublished_store(folder, folder / store_filename(root.require_infra().chunks.fingerprint))


def _remove_unpublished_store(folder: Path, store: Path) -> None:
    """A failed save removes the store file it put in, unless the manifest names it (an overwrite of the same
    corpus replaced the served store in place): a full disk must not keep a second copy of the corpus."""
    try:
        named = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8")).get("store")
    except (OSError, ValueError, AttributeError):
        named = None
    if named != store.name:
        try:
            store.unlink(missing_ok=True)
        except OSError:  # the save's own error is the one to report; the next save removes the file (stale)
            pass
def saved_store_url(folder: str | Path, store_url: str | None = None) -> str:
    """The URL of a saved tree's store (``store_url`` when given: a tree indexed with ``--store``), without
    loading the tree: what a listing of its documents reads (``dashrag documents``, ``dashrag fields``)."""
    folder = Path(folder)
    return store_url if store_url is not None else _store_in_folder(folder, read_manifest(folder).get("store"))


def _store_in_folder(folder: Path, ref: str | None) -> str:
    """The URL of the store file the manifest names, which must lie inside the saved folder."""
    if not ref:
        raise PersistenceError(f"{folder}: the manifest names no store; pass store_url")
    if not STORE_FILE_PATTERN.fullmatch(ref):
        raise PersistenceError(
            f"{folder}: the manifest names the store {excerpt(ref)}, which is not a store file inside the folder; "
            "pass its URL explicitly (store_url=..., or --store) to load from it")
    path = folder / ref
    if not path.is_file():
        raise PersistenceError(f"{path}: the store file named in the manifest is missing")
    return sqlite_url(path)


def _mapped_chunk_set(snapshot: Path, store: Path, fingerprint: str, scheme: int) -> ChunkSet:
    """The chunk set of a saved tree from its snapshot's columns, mapped (core/chunk_columns.py), its texts read
    from its store file when shown (held open, as a load from the rows holds it)."""
    texts = SqliteChunkTexts(store)
    try:
        return read_chunk_columns(snapshot, texts, fingerprint, scheme)
    except BaseException:
        texts.close()
        raise


def _external_columns(folder: Path, url: str, manifest: dict[str, Any],
                      snapshot: Path) -> tuple[ChunkSet, dict[str, Any], Path] | None:
    """The chunk set of a tree whose store is an external database (PostgreSQL), from the snapshot's columns, its
    texts read from the store when shown, when the store records the fingerprint of the manifest's corpus (or of a
    pending manifest's: an update committed and stopped before its switch, store/external_change.py) and holds the
    columns' chunk ids; None otherwise (the rows are read and checked, as before columns were saved for it). The
    store's fingerprint is written in the transaction that changes its rows, so it names what they are. Why: the
    rows read as ``Chunk`` objects and hashed, then every text read whole, were an update's largest PostgreSQL-only
    cost, O(corpus) (docs/scale.md, "PostgreSQL-stored trees at 1M"). The fingerprint, the ids and every text a
    query later shows are read in one snapshot, held while the tree lives (store/snapshot_texts.py): a reader keeps
    the corpus it loaded while another writer changes the database."""
    from dashrag.store.snapshot_texts import texts_as_loaded
    from dashrag.store.store import Store, read_only_url

    texts = texts_as_loaded(Store(read_only_url(url), read_only=True))
    try:
        held = texts.fingerprint()
        if held != manifest["corpus_fingerprint"]:
            pending = read_pending_manifest(folder)
            if pending is None or held != pending["corpus_fingerprint"] or not pending.get("chunk_columns"):
                texts.close()
                return None
            manifest, snapshot = pending, verify_snapshot(folder, pending, False)
        chunk_set = read_chunk_columns(snapshot, texts, manifest["corpus_fingerprint"],
                                       scheme_of_format(manifest["format_version"]))
        if not texts.holds_ids(chunk_set.ids):
            texts.close()
            return None
    except BaseException:
        texts.close()
        raise
    return chunk_set, manifest, snapshot


def holds_state(node: ConfigObject) -> bool:
    """Whether the node reads state of its own on load. A folder saved before a stateless sub-component
    existed (the ``index`` of a dense or BM25 node, whose state its parent saves) has no folder for it,
    and still loads: nothing of it was lost."""
    return type(node)._load is not ConfigObject._load


def load(folder: str | Path, store_url: str | None = None, *, full_check: bool = False) -> Retriever:
    """Load a saved tree without refitting; refuses a folder whose corpus or format does not match.

    Nothing is written, whatever the folder holds: the store is opened read-only, and
    a load running while another process saves the folder gets the old or the new tree.
    A store file and state files whose size, times and inode are those the save recorded are
    not re-hashed; ``full_check`` re-hashes everything (docs/performance.md, "Loads check").
    """
    folder = Path(folder)

    def read(manifest: dict[str, Any], snapshot: Path) -> Retriever:
        url = store_url if store_url is not None else _store_in_folder(folder, manifest.get("store"))
        unchanged = (store_url is None and not full_check
                     and _unchanged_store(folder / manifest["store"], manifest.get("store_stat")))
        scheme = scheme_of_format(manifest["format_version"])
        columns = manifest.get("chunk_columns")
        external = _external_columns(folder, url, manifest, snapshot) \
            if store_url is not None and columns and not full_check else None
        if external is not None:  # an external store that holds the corpus the columns were saved with
            chunk_set, manifest, snapshot = external
        elif unchanged and columns:  # the fingerprint trusted without re-hashing: so are the columns the save wrote
            chunk_set = _mapped_chunk_set(snapshot, folder / manifest["store"], manifest["corpus_fingerprint"], scheme)
        else:  # read-only; an SQLite file through sqlite3 (docs/performance.md); fingerprinted as the manifest's was
            chunk_set = read_chunk_set(url, manifest["corpus_fingerprint"] if unchanged else None, scheme)
        if chunk_set.fingerprint != manifest["corpus_fingerprint"]:
            pending = read_pending_manifest(folder) if store_url is not None else None
            if pending is None or pending["corpus_fingerprint"] != chunk_set.fingerprint_under(
                    scheme_of_format(pending["format_version"])):
                raise PersistenceError(
                    f"{folder}: saved for corpus {manifest['corpus_fingerprint'][:12]}, but the store holds corpus "
                    f"{chunk_set.fingerprint[:12]} (a folder saved for another corpus)"
                )
            # an update committed its external store and was stopped before it switched the manifest: its
            # pending manifest is the tree the store holds (store/external_change.py)
            manifest, snapshot = pending, verify_snapshot(folder, pending, full_check)
            chunk_set = chunk_set.with_fingerprint_scheme(scheme_of_format(pending["format_version"]))
        elif columns and store_url is None and not unchanged:  # the rows read (a store copied, a full check):
            check_columns_agree(snapshot, chunk_set)  # the columns must be theirs, as the fingerprint is
        try:
            root = build_as(manifest["config"], Retriever, "retriever")
        except ConfigError as exc:
            raise PersistenceError(f"{folder}: the saved config is not valid here: {exc}") from None
        chunker = manifest.get("chunker")
        if chunker is not None and not isinstance(chunker, dict):
            raise PersistenceError(f"{folder}: the manifest's 'chunker' is not a component config")
        root.inject_infra(Infra(env_path=folder, chunks=chunk_set, store_url=url, workdir=folder, chunker=chunker,
                                source_folder=manifest.get("source_folder")))
        try:
            for path, node in reversed(list(root.iter_nodes())):  # children before their parents
                node_dir = snapshot / "nodes" / node_dirname(path)
                if not node_dir.is_dir():
                    if not holds_state(node):  # a sub-component added after the folder was saved (an index)
                        continue
                    raise PersistenceError(f"{node_dir}: state folder of node {path} is missing")
                node.load_state(node_dir)
        except BaseException:
            root.close()
            raise
        return root

    with young_garbage_only():  # what a load makes lives as long as the tree: nothing to sweep
        return read_consistently(folder, read, full_check)
