"""Checking the paths a command will write, before it does any work.

``index --out`` and ``eval --json/--plot`` used to fail only after a whole build or
evaluation run (or, for a file given as the folder, with a traceback). Every output
path is checked here first; an error names the option and the path, and nothing
has been written.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from dashrag.core.persistence import MANIFEST_NAME
from dashrag.errors import PersistenceError

#: What a build or save of dashrag puts in ``--out`` before the manifest exists (another ``index`` of
#: the same folder may be half-way): the store (temporary, journal), the locks, snapshots, the embedding cache.
OWN_ENTRY = re.compile(r"\.?store-[^/]*\.sqlite(\.tmp)?(-journal|-wal|-shm)?|\.dashrag\..*|\.partial-snapshot-.*|"
                       r"snapshot-[0-9a-f]+|embeddings")


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path.cwd()  # pragma: no cover - a relative path always has the cwd above it


def _cannot_write_in(folder: Path) -> str | None:
    """Why no file can be created in ``folder`` (None: one can). Tried, not guessed from the mode bits:
    root passes every permission check, yet cannot write in /proc, a read-only mount or an immutable folder."""
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".dashrag-probe-"):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def _check_writable_under(path: Path, option: str) -> None:
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise PersistenceError(f"{option} {path}: {existing} is a file, not a folder")
    if (why := _cannot_write_in(existing)) is not None:
        raise PersistenceError(f"{option} {path}: {existing} cannot be written ({why})")


def check_output_folder(path: Path, option: str, overwrite: bool) -> None:
    """A folder to save a tree in: a new or empty folder, or with ``overwrite`` a saved tree (replaced) or any
    folder. A saved tree is never replaced without asking, as the web page and ``POST /trees`` ask (409)."""
    if path.exists() and not path.is_dir():
        raise PersistenceError(f"{option} {path}: is a file, not a folder")
    _check_writable_under(path, option)
    if (path / MANIFEST_NAME).is_file() and not overwrite:
        raise PersistenceError(f"{option} {path}: holds a saved tree; pass --overwrite to replace it")
    if path.is_dir() and not (path / MANIFEST_NAME).is_file() and not overwrite and any(
            not OWN_ENTRY.fullmatch(entry.name) for entry in path.iterdir()):
        raise PersistenceError(f"{option} {path}: the folder holds files but no saved tree; "
                               "pass --overwrite to save into it anyway (its other files are kept)")


def create_output_folder(path: Path, option: str) -> None:
    """Create the folder once every input has been read; an OS refusal is a clear error."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PersistenceError(f"{option} {path}: cannot be created ({exc.strerror})") from None


def check_output_file(path: Path | None, option: str) -> None:
    """A file a command writes at its end: its folder must exist and be writable, and it is not a folder."""
    if path is None:
        return
    if path.is_dir():
        raise PersistenceError(f"{option} {path}: is a folder; give a file name")
    parent = path.parent
    if not parent.is_dir():
        what = "is a file" if parent.exists() else "does not exist"
        raise PersistenceError(f"{option} {path}: the folder {parent} {what}")
    if (why := _cannot_write_in(parent)) is not None:
        raise PersistenceError(f"{option} {path}: the folder {parent} cannot be written ({why})")
