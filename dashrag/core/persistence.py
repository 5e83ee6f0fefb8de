"""Saved folders: pickle-free, atomic, checked on load.

Layout of a saved retriever folder::

    DIR/dashrag.json              manifest: format version, config, corpus fingerprint,
                                  store, and the sha256 of every state file
    DIR/snapshot-<id>/nodes/<node path>/...   one sub-folder per node (.npy, .json)

A save writes a *new* snapshot folder completely, then replaces the manifest
atomically (temporary file + ``os.replace``), then deletes older snapshots. A save
killed at any moment therefore leaves the previous manifest pointing at the
previous, complete snapshot. Loading checks the format version, that every state
file is present with its recorded checksum (so a truncated or edited file is an
error naming it), and leaves the folder untouched whatever it finds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any, Callable

import numpy as np

from dashrag.errors import PersistenceError

FORMAT_NAME = "dashrag-saved-retriever"
FORMAT_VERSION = 1
MANIFEST_NAME = "dashrag.json"
SNAPSHOT_PREFIX = "snapshot-"


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
def node_dirname(node_path: str) -> str:
    """``root.children[0]`` → ``root.children.0`` (safe on every file system)."""
    return node_path.replace("[", ".").replace("]", "")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_saved_folder(
    folder: Path,
    write_nodes: Callable[[Path], None],
    manifest_fields: dict[str, Any],
) -> Path:
    """Write a new snapshot with ``write_nodes(snapshot_dir)``, then switch the manifest to it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    snapshot = folder / f"{SNAPSHOT_PREFIX}{uuid.uuid4().hex[:12]}"
    snapshot.mkdir()
    try:
        write_nodes(snapshot)
        files = {
            p.relative_to(snapshot).as_posix(): {"sha256": _sha256(p), "bytes": p.stat().st_size}
            for p in sorted(snapshot.rglob("*")) if p.is_file()
        }
    except BaseException:
        shutil.rmtree(snapshot, ignore_errors=True)
        raise
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        **manifest_fields,
        "snapshot": snapshot.name,
        "files": files,
    }
    atomic_write_json(folder / MANIFEST_NAME, manifest)
    for old in folder.glob(f"{SNAPSHOT_PREFIX}*"):
        if old.is_dir() and old.name != snapshot.name:
            shutil.rmtree(old, ignore_errors=True)
    return snapshot


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a saved folder, after checking it is one this version can read."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PersistenceError(f"{folder}: no such saved retriever folder")
    path = folder / MANIFEST_NAME
    if not path.is_file():
        raise PersistenceError(f"{folder}: not a saved retriever (no {MANIFEST_NAME})")
    manifest = load_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise PersistenceError(f"{path}: not a dashrag manifest")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise PersistenceError(
            f"{path}: saved with format version {version!r}; this dashrag reads versions 1..{FORMAT_VERSION}"
            " (upgrade dashrag to load it)"
        )
    for key in ("config", "corpus_fingerprint", "snapshot", "files"):
        if key not in manifest:
            raise PersistenceError(f"{path}: manifest lacks {key!r}")
    return manifest


def verify_snapshot(folder: Path, manifest: dict[str, Any]) -> Path:
    """Check every recorded state file is present, of its size and checksum; return the snapshot dir."""
    snapshot = Path(folder) / manifest["snapshot"]
    if not snapshot.is_dir():
        raise PersistenceError(f"{snapshot}: snapshot folder named in the manifest is missing")
    for rel, expected in manifest["files"].items():
        path = snapshot / rel
        if not path.is_file():
            raise PersistenceError(f"{path}: state file missing")
        if path.stat().st_size != expected["bytes"]:
            raise PersistenceError(f"{path}: state file is {path.stat().st_size} bytes, "
                                   f"expected {expected['bytes']} (truncated or edited)")
        if _sha256(path) != expected["sha256"]:
            raise PersistenceError(f"{path}: state file checksum differs from the manifest (edited or corrupted)")
    return snapshot


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
