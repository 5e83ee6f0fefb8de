"""Reading a user's folder: every file converted by its type (docs/documents.md), one outcome per file.

Bad files never stop a folder: a file of an unknown type is *skipped*, a file of a known type that
cannot be read (corrupt, encrypted, a scan without a text layer, a zip bomb, too big, too slow, an
unknown encoding) *fails*; each gets one warning naming the file and the reason, and the rest is read.
Hidden files and folders (``.git``, ``.DS_Store``) and the metadata sidecar are not documents and are
passed over without a word.

Each document's metadata gains what the file says about itself: ``path`` (relative to the folder, also
its id), ``file_type``, ``title`` (the file's own title or first heading; "" if none), ``modified``
(its mtime, ISO 8601 UTC), ``sha256`` (of its bytes: what ``dashrag sync`` compares, so a file touched
but not changed is not re-indexed) and, for PDFs, ``pages``. A sidecar field of the same name wins.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dashrag.documents.converters import ConversionFailed, Converted, FileType, ReadLimits, converter_for
from dashrag.documents.converters.worker import ConversionWorker
from dashrag.documents.model import SourceDocument
from dashrag.errors import CorpusError

log = logging.getLogger(__name__)

READ_FIELDS = ("path", "file_type", "title", "modified", "sha256", "pages")  # what the reader records


@dataclass
class FolderRead:
    documents: list[SourceDocument] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "<path>: <why>", files left out on purpose
    failed: list[str] = field(default_factory=list)  # "<path>: <why>", files that could not be read

    def refuse_failures(self) -> None:
        """``--strict``: a file that could not be read is an error (before anything is written)."""
        if self.failed:
            raise CorpusError(f"{len(self.failed)} file(s) could not be read (--strict), the first: {self.failed[0]}")


def read_folder(folder: Path, follow_symlinks: bool, limits: ReadLimits,
                sidecar: dict[str, dict[str, Any]], sidecar_name: str) -> FolderRead:
    """Every file under ``folder`` read (or left out, with why)."""
    files, outcome = files_of_folder(folder, follow_symlinks, sidecar_name)
    read_files(folder, files, limits, sidecar, outcome)
    return outcome


def _known(path: Path, outcome: FolderRead) -> bool:
    if converter_for(path) is None:
        _left_out(outcome.skipped, path, f"unknown file type '{path.suffix or path.name}'")
        return False
    return True


def files_of_folder(folder: Path, follow_symlinks: bool, sidecar_name: str) -> tuple[list[Path], FolderRead]:
    """The files under ``folder`` of a type dashrag reads, and the outcome so far (links and unknown types
    skipped): what a sync hashes before it converts only what changed."""
    outcome = FolderRead()
    files = [p for p in _walk(folder, follow_symlinks, outcome.skipped, sidecar_name) if _known(p, outcome)]
    return files, outcome


def read_files(folder: Path, files: list[Path], limits: ReadLimits, sidecar: dict[str, dict[str, Any]],
               outcome: FolderRead) -> None:
    """Convert ``files`` (of known types, under ``folder``) into ``outcome``: documents, or a line each."""
    with ConversionWorker(limits) as worker:
        for path in files:
            rel = path.relative_to(folder).as_posix()
            kind = converter_for(path)
            assert kind is not None  # files_of_folder kept only known types
            try:
                document = _read_one(path, rel, kind, limits, worker, sidecar.get(rel, {}))
            except ConversionFailed as exc:
                _left_out(outcome.failed, path, str(exc), failed=True)
                continue
            if document is None:
                _left_out(outcome.skipped, path, "empty")
            else:
                outcome.documents.append(document)


def _left_out(into: list[str], path: Path, why: str, failed: bool = False) -> None:
    log.warning("%s %s: %s", "failed" if failed else "skipped", path, why)
    into.append(f"{path}: {why}")


def _read_one(path: Path, rel: str, kind: FileType, limits: ReadLimits, worker: ConversionWorker,
              extra: dict[str, Any]) -> SourceDocument | None:
    stat = path.stat()
    if stat.st_size > limits.max_file_bytes:
        raise ConversionFailed(f"{stat.st_size / 2**20:.0f} MiB, more than the cap of {limits.max_file_mb:g} MiB "
                               "(DASHRAG_MAX_FILE_MB)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConversionFailed(f"cannot be read ({exc.strerror})") from None
    converted = worker.convert(path, kind.name) if kind.isolated else kind.convert(path, limits)
    if not converted.text.strip():
        return None
    metadata = {**file_metadata(rel, kind.name, converted, stat.st_mtime, raw), **extra}
    return SourceDocument(id=rel, text=converted.text, metadata=metadata, source=str(path))


def file_metadata(rel: str, file_type: str, converted: Converted, mtime: float, raw: bytes) -> dict[str, Any]:
    modified = datetime.fromtimestamp(mtime, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    fields: dict[str, Any] = {"path": rel, "file_type": file_type, "title": converted.title, "modified": modified,
                              "sha256": hashlib.sha256(raw).hexdigest()}
    if converted.paged:
        fields["pages"] = len(converted.pages)
    return fields


def _walk(folder: Path, follow_symlinks: bool, skipped: list[str], sidecar_name: str) -> list[Path]:
    """Every file under ``folder`` in a stable order (hidden ones and the sidecar passed over); links left
    out unless ``follow_symlinks``, each with why."""
    found = []
    for root, dirs, names in os.walk(folder, followlinks=follow_symlinks):
        here = Path(root)
        for name in [d for d in dirs if d.startswith(".") or (not follow_symlinks and (here / d).is_symlink())]:
            dirs.remove(name)
            if not name.startswith("."):
                _left_out(skipped, here / name, "a symbolic link (pass --follow-symlinks to read it)")
        for name in names:
            path = here / name
            if name.startswith(".") or (here == folder and name == sidecar_name):
                continue
            if path.is_symlink() and not follow_symlinks:
                _left_out(skipped, path, "a symbolic link (pass --follow-symlinks to read it)")
            elif path.is_file():
                found.append(path)
    return sorted(found)
