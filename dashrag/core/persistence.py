"""Saved folders: pickle-free, atomic, serialised, checked on load.

Layout of a saved retriever folder::

    DIR/dashrag.json              manifest: format version, config, corpus fingerprint,
                                  store, and the sha256 of every state file
    DIR/.dashrag.lock             the advisory lock that serialises saves (never taken by loads)
    DIR/.dashrag.readers          the lock loads share while they read (saves clean up only when it is free)
    DIR/snapshot-<id>/.dashrag-snapshot       the mark of a snapshot dashrag wrote
    DIR/.partial-snapshot-<id>/   a snapshot being written (renamed to snapshot-<id> when complete)
    DIR/snapshot-<id>/nodes/<node path>/...   one sub-folder per node (.npy, .json)
    DIR/snapshot-<id>/chunks/...  the chunk set's columns, which a load maps (``chunk_columns``)
    DIR/models/<digest>/...       large files stored once per folder and referenced by the nodes
                                  that use them (``shared_files``: a model's ONNX export)

**Saves** to one folder take the folder's advisory lock (``filelock``: ``flock`` on
``.dashrag.lock``), so two processes saving at once run one after the other and the
folder always ends with one complete save. A save writes a *new*, marked snapshot
completely (under a ``.partial-`` name, renamed when done), then replaces the
manifest atomically (temporary file + ``os.replace``), then removes the marked
snapshots that neither the new manifest nor the one it replaced names (see the grace
rule), and what saves killed earlier left (temporary manifests, partial snapshots).
A folder named ``snapshot-*`` without the mark is the user's and is never touched.
A save killed at any moment leaves the previous manifest naming the previous,
complete snapshot.

**Grace rule.** A load holds a *shared* ``flock`` on ``.dashrag.readers`` (opened
read-only: taking it changes no byte) from before it reads the manifest until it has
read the snapshot. A save removes old snapshots only when it can take that lock
exclusively without waiting, i.e. while no load is reading; otherwise it leaves them
for a later save. Even then the snapshot the previous manifest named is kept until
the next save. Where the reader lock cannot be taken (a folder saved by an older
dashrag, a platform without ``flock``), a load that finds files gone re-reads the
manifest and, if a save switched it meanwhile, starts again from the new one
(:func:`read_consistently`). A load therefore gets the old or the new tree, never neither.

**Loads** never write: they take no lock, check the manifest against its pydantic
schema (:class:`Manifest`), check every state file's size and checksum, and leave
the folder byte-identical whatever they find.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
import warnings
from contextlib import contextmanager
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from dashrag.core.shared_files import (
    SHARED_FOLDER,
    SHARED_PATH_PATTERN,
    digests_of,
    file_sha256,
    references_in,
)
from dashrag.errors import PersistenceError, excerpt

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no reader lock, loads rely on re-reading the manifest
    fcntl = None  # type: ignore[assignment]

FORMAT_NAME = "dashrag-saved-retriever"
#: 2: the corpus fingerprint is additive (documents/fingerprint.py: an update hashes what it changed); a folder of
#: format 1 (fingerprinted sequentially) still loads and is verified as it was, and its first update saves format 2
#: (a save writes the format of its chunk set's fingerprint: :data:`FORMAT_VERSION` for an additive one).
FORMAT_VERSION = 2
MANIFEST_NAME = "dashrag.json"
#: The manifest of a save that commits an external store's change before it switches ``MANIFEST_NAME``
#: (store/external_change.py): written first, so a kill after the commit rolls forward on load.
PENDING_MANIFEST_NAME = "dashrag.pending.json"
SNAPSHOT_PREFIX = "snapshot-"
#: The folder of a snapshot that holds the chunk set's columns, which a load maps (core/chunk_columns.py).
CHUNK_COLUMNS_FOLDER = "chunks"


# -- atomic primitives --------------------------------------------------------
def _atomic_write(path: Path, write: Callable[[Any], None], mode: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``target``; when the block ends without error it becomes
    ``target`` by rename (an older ``target`` is moved aside first and removed after), so a reader sees
    the old folder or the whole new one, never half of it. On error the temporary folder is removed."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.partial-"))
    try:
        yield staging
        if target.exists():
            retired = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
            os.replace(target, retired / target.name)
            os.replace(staging, target)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    _atomic_write(path, lambda h: h.write(text.encode("utf-8")), "wb")


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def save_array(path: Path, array: np.ndarray) -> None:
    """Write one array as ``.npy`` (never pickled objects)."""
    array = np.asarray(array)
    if array.dtype == object:
        raise TypeError(f"refusing to save an object array to {path}")
    _atomic_write(path, lambda h: np.save(h, array, allow_pickle=False), "wb")


def load_array(path: Path, mmap: bool = False) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise PersistenceError(f"{path}: not a readable .npy array ({exc})") from None


def load_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PersistenceError(f"{path}: missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PersistenceError(f"{path}: not valid JSON ({exc})") from None


# -- saved folders ------------------------------------------------------------
LOCK_NAME = ".dashrag.lock"
#: Files a writer makes in the folder only while it holds the save lock (a build's and an update's temporary
#: store, with SQLite's journal beside it; a store being copied in): one that the next holder of the lock finds
#: was left by a writer that was killed, so that save removes it (docs/reliability.md).
LOCKED_TEMPORARIES = (".store-*.sqlite.tmp", ".store-*.sqlite.tmp-*")
READERS_LOCK_NAME = ".dashrag.readers"
TRASH_PREFIX = ".trash-"
PARTIAL_PREFIX = ".partial-"
SNAPSHOT_MARK = ".dashrag-snapshot"
SNAPSHOT_NAME_PATTERN = r"^snapshot-[0-9a-f]{8,64}$"
#: How long a save waits for another save of the same folder before giving up.
LOCK_TIMEOUT_S = float(os.environ.get("DASHRAG_SAVE_LOCK_TIMEOUT", "600"))
#: How many times a load starts again when the manifest changed under it.
LOAD_ATTEMPTS = 8

T = TypeVar("T")


def node_dirname(node_path: str) -> str:
    """``root.children[0]`` → ``root.children.0`` (safe on every file system)."""
    return node_path.replace("[", ".").replace("]", "")


def saved_folder_of(node_dir: Path) -> Path:
    """The saved folder a node's state folder belongs to (``DIR/snapshot-<id>/nodes/<node>`` → ``DIR``)."""
    return Path(node_dir).parents[2]


def file_stat(path: Path) -> list[int]:
    """What a load compares instead of re-hashing: size, modification and change times (ns), inode.

    Any write through the file system changes the mtime and the ctime (which no tool sets back
    without moving the system clock), a replaced file has another inode, and a copied folder has
    other inodes and times: each sends the load back to the full checksum."""
    stat = Path(path).stat()
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]


class FileRecord(BaseModel):
    """One state file of a snapshot: its size and checksum."""

    model_config = ConfigDict(extra="forbid", strict=True)

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class Manifest(BaseModel):
    """The manifest ``dashrag.json``: the one schema both the writer and the reader follow.

    Strict (no string-as-number, no bool-as-int): a hand-edited or foreign manifest
    is refused with the field that is wrong, never half-used.
    """

    model_config = ConfigDict(extra="allow", strict=True)

    format: Literal["dashrag-saved-retriever"]
    format_version: int = Field(ge=1, le=FORMAT_VERSION)
    config: dict[str, Any]
    corpus_fingerprint: str = Field(min_length=1, max_length=128)
    store: str | None = None
    saved_at: str | None = None
    source_folder: str | None = Field(None, min_length=1, max_length=4096, description=(
        "The folder of files the tree was built from, which a sync reads when it is given none (docs/documents.md):"
        " absolute when the CLI built it, relative to the data root when the service did; absent: not built from"
        " a folder of files"))
    snapshot: str = Field(pattern=SNAPSHOT_NAME_PATTERN)
    chunk_columns: Literal["chunks"] | None = Field(None, description=(
        "The snapshot's folder of the chunk set's columns, which a load that trusts the store's fingerprint maps "
        "instead of reading every chunk's row (core/chunk_columns.py); absent: read the store's rows (a folder "
        "saved before they were written, or whose store is not a file of the folder)"))
    files: dict[str, FileRecord]
    shared: dict[str, FileRecord] = Field(default_factory=dict, description=(
        "Files of the folder's shared store (models/<digest>/<name>) the snapshot's nodes reference; absent "
        "from folders saved before the store existed"))

    @field_validator("shared")
    @classmethod
    def _shared_paths(cls, shared: dict[str, FileRecord]) -> dict[str, FileRecord]:
        for rel in shared:
            if not SHARED_PATH_PATTERN.fullmatch(rel):
                raise ValueError(f"{excerpt(rel)} is not a file of the shared store (models/<digest>/<name>)")
        return shared

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: dict[str, FileRecord]) -> dict[str, FileRecord]:
        for rel in files:
            parts = PurePosixPath(rel).parts
            if not parts or rel.startswith("/") or "\\" in rel or any(p in ("..", ".", "") for p in parts):
                raise ValueError(f"{excerpt(rel)} is not a path inside the snapshot")
        return files


@contextmanager
def save_lock(folder: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the folder's advisory save lock (re-entrant in one thread; loads never take it)."""
    from filelock import FileLock, Timeout  # a save's import: a load never locks

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder.resolve() / LOCK_NAME), timeout=LOCK_TIMEOUT_S if timeout is None else timeout,
                    is_singleton=True)
    try:
        lock.acquire()
    except Timeout:
        raise PersistenceError(f"{folder}: another save of this folder held its lock for {lock.timeout:.0f}s; "
                               "try again when it has finished") from None
    try:
        yield
    finally:
        lock.release()


def _is_our_snapshot(path: Path) -> bool:
    return (path.is_dir() and not path.is_symlink() and re.match(SNAPSHOT_NAME_PATTERN, path.name) is not None
            and (path / SNAPSHOT_MARK).is_file())


def _current_snapshot_name(folder: Path) -> str | None:
    try:
        return read_manifest(folder)["snapshot"]
    except PersistenceError:
        return None


@contextmanager
def _readers_lock(folder: Path, exclusive: bool) -> Iterator[bool]:
    """The reader lock: shared for a load (waits for a cleanup to finish), exclusive without waiting for a
    save's cleanup. Yields whether it is held; opening the file read-only means a load still writes nothing."""
    if fcntl is None:
        yield False
        return
    try:
        fd = os.open(folder / READERS_LOCK_NAME, os.O_RDONLY)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the flock


def _remove_unnamed(folder: Path, keep: set[str], stale: Callable[[Path], bool],
                    keep_shared: set[str] | frozenset[str] = frozenset()) -> None:
    """Remove marked snapshots not in ``keep``, shared folders not in ``keep_shared`` and the files ``stale``
    names (only while no load is reading), and temporary manifests of killed saves (under the save lock)."""
    if not (folder / READERS_LOCK_NAME).exists():
        (folder / READERS_LOCK_NAME).touch()
    with _readers_lock(folder, exclusive=True) as no_reader:
        if no_reader:
            for entry in folder.iterdir():
                if entry.name not in keep and _is_our_snapshot(entry):
                    # renamed first, so a save killed half-way through the delete leaves no unmarked snapshot
                    trash = folder / f"{TRASH_PREFIX}{entry.name}"
                    os.replace(entry, trash)
                    shutil.rmtree(trash, ignore_errors=True)
                elif entry.name.startswith(f"{TRASH_PREFIX}{SNAPSHOT_PREFIX}") and entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)
                elif entry.is_file() and not entry.is_symlink() and stale(entry):
                    entry.unlink(missing_ok=True)
            _remove_unnamed_shared(folder / SHARED_FOLDER, keep_shared)
    for entry in folder.iterdir():  # what killed saves left (no other save runs: the save lock is held)
        if entry.name.startswith(f".{MANIFEST_NAME}.") and entry.name.endswith(".tmp") and entry.is_file():
            entry.unlink(missing_ok=True)
        elif any(fnmatch(entry.name, p) for p in LOCKED_TEMPORARIES) and entry.is_file() and not entry.is_symlink():
            entry.unlink(missing_ok=True)
        elif entry.name.startswith(f"{PARTIAL_PREFIX}{SNAPSHOT_PREFIX}") and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


def _remove_unnamed_shared(shared: Path, keep: set[str] | frozenset[str]) -> None:
    """The shared folders no kept manifest names, and the staging folders of killed saves (no load reading)."""
    if not shared.is_dir() or shared.is_symlink():
        return
    for entry in shared.iterdir():
        if entry.is_symlink() or not entry.is_dir() or entry.name in keep:
            continue
        if re.fullmatch(r"[0-9a-f]{64}", entry.name) or re.match(r"^\.[0-9a-f]{64}\.(partial|old)-", entry.name):
            shutil.rmtree(entry, ignore_errors=True)


class CleanupWarning(UserWarning):
    """A save published its new tree, but what the previous one left (an old store, a snapshot) could not be
    removed: the save succeeded, and the next one tries again. Warned, never raised: a caller that reported
    the save as failed would tell a user the old tree is served when the new one is (issue 38)."""


def _clean_after_publish(folder: Path, keep: set[str], stale: Callable[[Path], bool], keep_shared: set[str]) -> None:
    try:
        _remove_unnamed(folder, keep, stale, keep_shared)
    except OSError as exc:
        warnings.warn(CleanupWarning(
            "the new tree is published, but what the previous one left could not be removed "
            f"({exc.strerror or type(exc).__name__}); the next save of the folder removes it"), stacklevel=3)


@contextmanager
def cleanup_warnings() -> Iterator[list[str]]:
    """Collect the CleanupWarnings of the saves inside (published, but the previous tree's files stayed), for
    a face to report (a job's ``warnings``, the CLI's ``warning:`` lines) instead of Python's warning output."""
    warned: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CleanupWarning)
        yield warned
    warned.extend(str(w.message) for w in caught if issubclass(w.category, CleanupWarning))


def write_saved_folder(
    folder: Path,
    write_nodes: Callable[[Path], None],
    manifest_fields: dict[str, Any],
    stale: Callable[[Path], bool] = lambda path: False,
    before_publish: Callable[[dict[str, Any]], None] | None = None,
) -> Path:
    """Under the save lock: write a new snapshot with ``write_nodes(snapshot_dir)``, switch the
    manifest to it, and remove the snapshots no manifest names any more (the grace rule keeps one)
    and the files of the folder that ``stale`` names (a store the new manifest no longer names:
    removed documents leave no text behind), once no load is reading.

    ``before_publish(manifest)``: what must happen once the snapshot is complete and before the
    manifest switches (an external store's commit: it writes the manifest as the pending one first).
    If it fails, the manifest stays and the new snapshot goes, unless a pending manifest names it (the
    store may hold its corpus: a load rolls forward to it); once the manifest switches, a pending
    manifest left by it (or by a killed save) goes."""
    folder = Path(folder)
    with save_lock(folder):
        previous = _current_snapshot_name(folder)
        previous_shared = _current_shared_digests(folder)
        snapshot = folder / f"{SNAPSHOT_PREFIX}{uuid.uuid4().hex[:16]}"
        partial = folder / f"{PARTIAL_PREFIX}{snapshot.name}"  # renamed to ``snapshot`` once complete and marked
        partial.mkdir()
        try:
            atomic_write_json(partial / SNAPSHOT_MARK, {"format": FORMAT_NAME, "written_by": "dashrag"})
            write_nodes(partial)
            files = {
                p.relative_to(partial).as_posix(): {"sha256": file_sha256(p), "bytes": p.stat().st_size}
                for p in sorted(partial.rglob("*")) if p.is_file() and p.name != SNAPSHOT_MARK
            }
            shared = {rel: record.model_dump() for rel, record in references_in(partial).items()}
            for rel, record in shared.items():  # share_files wrote them; a save never names what is not there
                path = folder / rel
                if not path.is_file() or path.stat().st_size != record["bytes"]:
                    raise PersistenceError(f"{path}: a node references this shared file, which is missing")
            os.replace(partial, snapshot)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        manifest = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            **manifest_fields,
            "snapshot": snapshot.name,
            "files": files,
            "file_stats": {rel: file_stat(snapshot / rel) for rel in files},  # the load's fast path
            **({"shared": shared, "shared_stats": {rel: file_stat(folder / rel) for rel in shared}} if shared else {}),
        }
        Manifest.model_validate(manifest)  # the writer follows the reader's schema
        if before_publish is not None:
            try:
                before_publish(manifest)
            except BaseException:
                pending = read_pending_manifest(folder)
                if pending is None or pending["snapshot"] != snapshot.name:
                    shutil.rmtree(snapshot, ignore_errors=True)
                raise
        atomic_write_json(folder / MANIFEST_NAME, manifest)  # published: from here on the save has succeeded
        (folder / PENDING_MANIFEST_NAME).unlink(missing_ok=True)
        _clean_after_publish(folder, {snapshot.name} | ({previous} if previous else set()), stale,
                             digests_of(shared) | previous_shared)
    return snapshot


def _current_shared_digests(folder: Path) -> set[str]:
    try:
        return digests_of(read_manifest(folder).get("shared"))
    except PersistenceError:
        return set()


def _validation_message(error: ValidationError) -> str:
    problems = []
    for err in error.errors()[:5]:
        where = ".".join(str(part) for part in err["loc"]) or "manifest"
        problems.append(f"{excerpt(where)}: {err['msg']}")
    return "; ".join(problems)


def _parse_manifest(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise PersistenceError(f"{path}: not valid JSON ({excerpt(str(exc), 120)})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise PersistenceError(f"{path}: not a dashrag manifest")
    version = manifest.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise PersistenceError(
            f"{path}: saved with format version {version!r}; this dashrag reads versions 1..{FORMAT_VERSION}"
            " (upgrade dashrag to load it)"
        )
    for key in ("config", "corpus_fingerprint", "snapshot", "files"):
        if key not in manifest:
            raise PersistenceError(f"{path}: manifest lacks {key!r}")
    try:
        Manifest.model_validate(manifest)
    except ValidationError as exc:
        raise PersistenceError(f"{path}: malformed manifest: {_validation_message(exc)}") from None
    return manifest


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _manifest_bytes(folder: Path) -> bytes:
    if not folder.is_dir():
        raise PersistenceError(f"{folder}: no such saved retriever folder")
    path = folder / MANIFEST_NAME
    if path.exists() and not path.is_dir() and not path.is_file():  # a FIFO or a device: reading it may block
        raise PersistenceError(f"{path}: is not a regular file (a pipe or a device), not a manifest")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise PersistenceError(f"{folder}: not a saved retriever (no {MANIFEST_NAME})") from None
    except IsADirectoryError:
        raise PersistenceError(f"{path}: is a folder, not a manifest") from None
    except OSError as exc:
        raise PersistenceError(f"{path}: cannot be read ({exc.strerror})") from None


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a saved folder, after checking it is one this version can read."""
    folder = Path(folder)
    return _parse_manifest(folder / MANIFEST_NAME, _manifest_bytes(folder))


def read_pending_manifest(folder: Path) -> dict[str, Any] | None:
    """The pending manifest of a save that was committing an external store's change (None: none, or one
    that cannot be read, which a load then ignores, as it ignores one whose commit never happened)."""
    path = Path(folder) / PENDING_MANIFEST_NAME
    try:
        return _parse_manifest(path, path.read_bytes())
    except (OSError, PersistenceError):
        return None


def unchanged_since_save(path: Path, recorded: Any) -> bool:
    """Whether ``path``'s :func:`file_stat` is the one the save recorded (never, where none was)."""
    try:
        return isinstance(recorded, list) and file_stat(path) == recorded
    except OSError:
        return False


def verify_snapshot(folder: Path, manifest: dict[str, Any], full: bool = False) -> Path:
    """Check every recorded state file is present, of its size and checksum; return the snapshot dir.

    A file whose size, times and inode are those the save recorded (``file_stats``) is not re-hashed
    unless ``full``: see :func:`file_stat` for what that still catches (docs/performance.md)."""
    snapshot = Path(folder) / manifest["snapshot"]
    if not snapshot.is_dir():
        raise PersistenceError(f"{snapshot}: snapshot folder named in the manifest is missing")
    stats = manifest.get("file_stats")
    stats = stats if isinstance(stats, dict) and not full else {}
    for rel, expected in manifest["files"].items():
        path = snapshot / rel
        try:
            size = path.stat().st_size
            if not path.is_file():
                raise PersistenceError(f"{path}: state file missing")
            if size != expected["bytes"]:
                raise PersistenceError(f"{path}: state file is {size} bytes, expected {expected['bytes']} "
                                       "(truncated or edited)")
            if unchanged_since_save(path, stats.get(rel)):
                continue
            if file_sha256(path) != expected["sha256"]:
                raise PersistenceError(f"{path}: state file checksum differs from the manifest (edited or corrupted)")
        except FileNotFoundError:
            raise PersistenceError(f"{path}: state file missing") from None
    _verify_shared(Path(folder), manifest, full)
    return snapshot


def _verify_shared(folder: Path, manifest: dict[str, Any], full: bool) -> None:
    """Check the shared files the snapshot's nodes use, as :func:`verify_snapshot` checks its own files."""
    stats = manifest.get("shared_stats")
    stats = stats if isinstance(stats, dict) and not full else {}
    for rel, expected in manifest.get("shared", {}).items():
        path = folder / rel
        try:
            if path.is_symlink() or not path.is_file():
                raise PersistenceError(f"{path}: shared model file missing")
            size = path.stat().st_size
            if size != expected["bytes"]:
                raise PersistenceError(f"{path}: shared model file is {size} bytes, expected {expected['bytes']} "
                                       "(truncated or edited)")
            if unchanged_since_save(path, stats.get(rel)):
                continue
            if file_sha256(path) != expected["sha256"]:
                raise PersistenceError(f"{path}: shared model file checksum differs from the manifest "
                                       "(edited or corrupted); save the tree again from its source, or rebuild it")
        except FileNotFoundError:
            raise PersistenceError(f"{path}: shared model file missing") from None


def read_consistently(folder: Path, read: Callable[[dict[str, Any], Path], T], full: bool = False) -> T:
    """``read(manifest, snapshot_dir)`` on one complete save, even while other processes save the folder.

    A failure is only believed when the manifest did not change meanwhile; if it did,
    a save replaced the tree under the reader, and the read starts again from the new
    manifest (at most :data:`LOAD_ATTEMPTS` times). Nothing here writes.
    """
    folder = Path(folder)
    for attempt in range(LOAD_ATTEMPTS):
        raw = _manifest_bytes(folder)
        try:
            with _readers_lock(folder, exclusive=False):
                raw = _manifest_bytes(folder)
                manifest = _parse_manifest(folder / MANIFEST_NAME, raw)
                return read(manifest, verify_snapshot(folder, manifest, full))
        except (PersistenceError, OSError) as exc:
            if attempt + 1 < LOAD_ATTEMPTS and _changed(folder, raw):
                continue
            if isinstance(exc, PersistenceError):
                raise
            raise PersistenceError(f"{folder}: cannot be read ({exc.strerror or exc})") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _changed(folder: Path, raw: bytes) -> bool:
    try:
        return _manifest_bytes(folder) != raw
    except PersistenceError:
        return True


def save_sparse(folder: Path, name: str, matrix: Any) -> None:
    """A CSR matrix as three ``.npy`` arrays plus its shape (no pickle, memory-mappable)."""
    import scipy.sparse as sp

    matrix = sp.csr_matrix(matrix)
    save_array(folder / f"{name}.data.npy", matrix.data)
    save_array(folder / f"{name}.indices.npy", matrix.indices)
    save_array(folder / f"{name}.indptr.npy", matrix.indptr)
    save_array(folder / f"{name}.shape.npy", np.asarray(matrix.shape, dtype=np.int64))


def load_sparse(folder: Path, name: str) -> Any:
    import scipy.sparse as sp

    parts = [load_array(folder / f"{name}.{part}.npy") for part in ("data", "indices", "indptr", "shape")]
    try:
        return sp.csr_matrix(tuple(parts[:3]), shape=tuple(int(x) for x in parts[3]))
    except (ValueError, TypeError) as exc:
        raise PersistenceError(f"{folder}/{name}.*.npy: inconsistent sparse matrix ({exc})") from None
