"""Large state files stored once per saved folder, content-addressed, shared by the nodes that use them.

A sentence-transformers node saves an ONNX export of its model (~87 MB for MiniLM). Written into each
node's folder, a tree with two nodes on one model held it twice, and every save of the tree (an
update, a re-save) wrote it again into the new snapshot. So such files go into the saved folder's
shared store instead::

    DIR/models/<digest>/<name>...             the files, written once (digest: see :func:`content_digest`)
    DIR/snapshot-<id>/nodes/<node>/<label>.shared.json   the node's reference: the digest and each
                                              file's size and sha256

The save collects the references of its snapshot into the manifest (``shared``: every shared file's
size and sha256, checked on load like any state file, so a tampered model is refused by name), and
removes the shared folders that neither the new manifest nor the previous one names, under the same
grace rule as snapshots (``persistence``). A shared folder appears by rename of a complete staging
folder: a killed save leaves none half-written, and a folder already there with other bytes (edited
by hand) is replaced from the source rather than trusted.

Between saved folders side by side (the trees of one ``--trees`` folder, a user's saves in one directory), a
file is shared on disk too: a new shared folder hard-links a sibling's copy of the same file instead of
writing it again (:func:`_sibling_copy`). Each tree still names and checks every byte it uses and stays
whole on its own (deleting one tree unlinks only its names), and only a sibling file this user owns whose
checksum is verified is linked; on another filesystem, or where links are refused, the file is copied.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dashrag.errors import PersistenceError

SHARED_FOLDER = "models"
REFERENCE_SUFFIX = ".shared.json"
DIGEST_PATTERN = r"^[0-9a-f]{64}$"
#: A shared file's path relative to the saved folder, as the manifest's ``shared`` names it.
SHARED_PATH_PATTERN = re.compile(r"^models/[0-9a-f]{64}/[A-Za-z0-9._-]{1,200}$")
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


class SharedFile(BaseModel):
    """One shared file: its size and checksum (what the manifest records and a load checks)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    sha256: str = Field(pattern=DIGEST_PATTERN)
    bytes: int = Field(ge=0)


class SharedReference(BaseModel):
    """``<label>.shared.json`` in a node's folder: which shared folder holds the node's files."""

    model_config = ConfigDict(extra="forbid", strict=True)

    digest: str = Field(pattern=DIGEST_PATTERN)
    files: dict[str, SharedFile]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_digest(files: dict[str, SharedFile]) -> str:
    """The folder's address: sha256 of its file names and their checksums, so equal contents share one folder."""
    canonical = json.dumps({name: record.sha256 for name, record in sorted(files.items())}, sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def shared_root(node_dir: Path) -> Path:
    """``DIR/models`` of the saved folder a node's state folder (``DIR/<snapshot>/nodes/<node>``) belongs to."""
    return Path(node_dir).parents[2] / SHARED_FOLDER


def _matches(folder: Path, files: dict[str, SharedFile]) -> bool:
    for name, record in files.items():
        path = folder / name
        if not path.is_file() or path.is_symlink() or path.stat().st_size != record.bytes:
            return False
        if file_sha256(path) != record.sha256:
            return False
    return True


def _sibling_copy(target: Path, name: str, record: SharedFile) -> Path | None:
    """The same file in the shared store of a saved folder beside this one (``../*/models/<digest>/name``):
    a plain file this user owns, of the recorded size and checksum (a file another user owns could be changed
    in place under our name); None when there is none."""
    saved_folder = target.parent.parent
    pattern = f"*/{SHARED_FOLDER}/{target.name}/{name}"
    for candidate in sorted(saved_folder.parent.glob(pattern)):
        if candidate.parents[2] == saved_folder or candidate.is_symlink() or not candidate.is_file():
            continue
        status = candidate.stat()
        if status.st_uid == os.getuid() and status.st_size == record.bytes and file_sha256(candidate) == record.sha256:
            return candidate
    return None


def _link_or_copy(sibling: Path | None, source: Path, destination: Path) -> None:
    if sibling is not None:
        try:
            os.link(sibling, destination)
            return
        except OSError:  # another filesystem, a filesystem without links, a link refused: a copy is as good
            pass
    shutil.copyfile(source, destination)


def share_files(node_dir: Path, label: str, source: Path, names: Sequence[str]) -> Path:
    """Store ``names`` of ``source`` once in the saved folder's shared store and reference them from the node.

    Returns the shared folder. Equal bytes from another node (or an earlier save) are not written again;
    a shared folder whose bytes differ from what its address says is replaced from ``source``."""
    if not _NAME_PATTERN.fullmatch(label):
        raise ValueError(f"{label!r} is not a plain reference label")
    files: dict[str, SharedFile] = {}
    for name in names:
        if not _NAME_PATTERN.fullmatch(name):
            raise ValueError(f"{name!r} is not a plain file name")
        path = Path(source) / name
        files[name] = SharedFile(sha256=file_sha256(path), bytes=path.stat().st_size)
    digest = content_digest(files)
    root = shared_root(node_dir)
    target = root / digest
    if Path(source).resolve() != target.resolve() and not _matches(target, files):
        from dashrag.core.persistence import atomic_directory  # persistence imports this module

        with atomic_directory(target) as staging:
            for name in names:
                _link_or_copy(_sibling_copy(target, name, files[name]), Path(source) / name, staging / name)
    from dashrag.core.persistence import atomic_write_json

    reference = SharedReference(digest=digest, files=files)
    atomic_write_json(Path(node_dir) / f"{label}{REFERENCE_SUFFIX}", reference.model_dump(mode="json"))
    return target


def read_reference(node_dir: Path, label: str) -> SharedReference | None:
    """The node's reference (None where the node has none: a folder saved before the shared store)."""
    path = Path(node_dir) / f"{label}{REFERENCE_SUFFIX}"
    if not path.is_file():
        return None
    try:
        return SharedReference.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        raise PersistenceError(f"{path}: not a shared-files reference ({str(exc).splitlines()[0]})") from None


def shared_folder(node_dir: Path, label: str) -> Path | None:
    """The shared folder the node's reference names, with every file it names present (the load checked their
    checksums against the manifest); None where the node has no reference."""
    reference = read_reference(node_dir, label)
    if reference is None:
        return None
    folder = shared_root(node_dir) / reference.digest
    missing = [name for name in reference.files if not (folder / name).is_file()]
    if missing:
        raise PersistenceError(f"{folder}: the shared files {', '.join(missing)} that node {Path(node_dir).name} "
                               "uses are missing")
    return folder


def shared_files_intact(node_dir: Path, label: str) -> bool:
    """Whether the shared files the node's reference names hold the bytes it records (True where it has none):
    what a reuse of a reference outside a checked load (an export cache) must confirm."""
    reference = read_reference(node_dir, label)
    return reference is None or _matches(shared_root(node_dir) / reference.digest, reference.files)


def references_in(snapshot: Path) -> dict[str, SharedFile]:
    """Every shared file the nodes of a snapshot reference, by path relative to the saved folder."""
    found: dict[str, SharedFile] = {}
    for path in sorted(Path(snapshot).rglob(f"*{REFERENCE_SUFFIX}")):
        reference = read_reference(path.parent, path.name[: -len(REFERENCE_SUFFIX)])
        if reference is None:  # pragma: no cover - the file was just listed
            continue
        if content_digest(reference.files) != reference.digest:
            raise PersistenceError(f"{path}: the digest does not match the files it lists")
        for name, record in reference.files.items():
            found[f"{SHARED_FOLDER}/{reference.digest}/{name}"] = record
    return found


def digests_of(shared: Any) -> set[str]:
    """The shared folders (digests) a manifest's ``shared`` field names."""
    if not isinstance(shared, dict):
        return set()
    return {rel.split("/")[1] for rel in shared if isinstance(rel, str) and SHARED_PATH_PATTERN.fullmatch(rel)}


def share_written(node_dir: Path, label: str, write: Callable[[Path], Sequence[str]]) -> SharedReference:
    """Store files written once, straight into the saved folder's shared store, and reference them from the node.

    ``write(folder)`` writes the files into an empty staging folder of the shared store and returns their names;
    they are hashed once and the folder is renamed to its address (no second copy, as :func:`share_files` makes
    of a source folder elsewhere). A state too large to write twice (a keyword index's base segment at a million
    chunks, docs/scale.md "Segments of the keyword index") is saved this way; a later save that keeps it calls
    :func:`keep_reference` instead and hashes nothing. A staging folder a kill leaves is removed by the next save
    (``persistence._remove_unnamed_shared``)."""
    import secrets
    import tempfile

    if not _NAME_PATTERN.fullmatch(label):
        raise ValueError(f"{label!r} is not a plain reference label")
    root = shared_root(node_dir)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{secrets.token_hex(32)}.partial-"))
    try:
        names = list(write(staging))
        files: dict[str, SharedFile] = {}
        for name in names:
            if not _NAME_PATTERN.fullmatch(name):
                raise ValueError(f"{name!r} is not a plain file name")
            path = staging / name
            files[name] = SharedFile(sha256=file_sha256(path), bytes=path.stat().st_size)
        digest = content_digest(files)
        target = root / digest
        if target.is_dir() and _matches(target, files):  # the same bytes saved before
            shutil.rmtree(staging, ignore_errors=True)
        else:
            if target.exists():  # bytes other than its address says (edited by hand): replaced
                shutil.rmtree(target)
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    reference = SharedReference(digest=digest, files=files)
    _write_reference(node_dir, label, reference)
    return reference


def keep_reference(node_dir: Path, label: str, reference: SharedReference) -> bool:
    """Reference shared files this folder already holds (of the recorded sizes) without reading them: False
    when it does not hold them (a save into another folder), and the caller writes them (:func:`share_written`).
    Their checksums were checked when they were written or loaded, and the manifest records them again."""
    if not _holds_sizes(shared_root(node_dir) / reference.digest, reference.files):
        return False
    _write_reference(node_dir, label, reference)
    return True


def _holds_sizes(folder: Path, files: dict[str, SharedFile]) -> bool:
    for name, record in files.items():
        path = folder / name
        if not path.is_file() or path.is_symlink() or path.stat().st_size != record.bytes:
            return False
    return True


def _write_reference(node_dir: Path, label: str, reference: SharedReference) -> None:
    from dashrag.core.persistence import atomic_write_json  # persistence imports this module

    atomic_write_json(Path(node_dir) / f"{label}{REFERENCE_SUFFIX}", reference.model_dump(mode="json"))
