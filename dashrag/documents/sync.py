"""A folder kept in sync with a saved tree: which files are new, changed or gone (docs/documents.md).

Pure: the plan compares what the tree holds (each document's metadata, as the folder reader wrote it)
with what the folder holds now (each file's sha256 and its sidecar fields). A file is *changed* when its
bytes or its sidecar fields differ, *unchanged* otherwise, whatever its mtime says (a touched or copied
file is not re-read). Only documents that came from files (they have ``path``) can be *removed*:
documents added as JSON or from a JSONL corpus are no file of the folder and are kept. Applying the
plan is :func:`dashrag.api.sync_tree`'s: it reads the new and changed files and calls
:func:`dashrag.api.update_tree`, the one update every face goes through.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dashrag.documents.folder import READ_FIELDS
from dashrag.documents.model import Metadata


@dataclass(frozen=True)
class FileState:
    """What a file of the folder is now: its bytes' sha256 and its sidecar fields."""

    sha256: str
    sidecar: Mapping[str, Any]


@dataclass(frozen=True)
class SyncPlan:
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()

    @property
    def to_read(self) -> tuple[str, ...]:
        return self.added + self.changed

    def counts(self) -> dict[str, int]:
        return {"added": len(self.added), "changed": len(self.changed), "removed": len(self.removed),
                "unchanged": len(self.unchanged)}


def sidecar_fields(metadata: Metadata) -> dict[str, Any]:
    """The fields of a document's metadata that its sidecar line gave (not the reader's own)."""
    return {k: v for k, v in metadata.items() if k not in READ_FIELDS}


def plan_sync(stored: Mapping[str, Metadata], found: Mapping[str, FileState]) -> SyncPlan:
    """``stored``: the tree's documents (id → metadata); ``found``: the folder's files (relative path → state).
    Ids and paths are the same strings (a folder document's id is its path)."""
    from_files = {i: m for i, m in stored.items() if "path" in m}
    added = tuple(p for p in found if p not in stored)
    changed: list[str] = []
    unchanged: list[str] = []
    for path, state in found.items():
        if path not in stored:
            continue
        old = stored[path]
        same = old.get("sha256") == state.sha256 and sidecar_fields(old) == dict(state.sidecar)
        (unchanged if same else changed).append(path)
    removed = tuple(i for i in from_files if i not in found)
    return SyncPlan(added, tuple(changed), removed, tuple(unchanged))
