"""The folder a tree was built from, as the service records and offers it (docs/documents.md, *Keeping a folder in
sync*): a build from a folder of files under the data root records it relative to that root (the manifest's
``source_folder``), and ``GET /trees``, the page's Sync control and a ``POST /trees/{name}/sync`` without a folder
use it. Why relative: a client names folders relative to the data root and must never learn the server's paths;
a folder recorded as an absolute path (a tree built by ``dashrag index``) is offered only when it lies under the
data root, as the relative path a client would type."""

from __future__ import annotations

from pathlib import Path

from dashrag.documents.corpus import is_folder_of_files


def recorded_source(corpus: Path, data_root: Path) -> str | None:
    """What a build of ``corpus`` (a resolved path under ``data_root``) records: the folder relative to the data
    root when it is a folder of files (what a sync reads), None for a JSONL file or a BEIR folder."""
    if not is_folder_of_files(corpus):
        return None
    return corpus.resolve().relative_to(data_root.resolve()).as_posix()


def offered_source(recorded: str | None, data_root: Path | None) -> str | None:
    """The recorded folder as a client of this service names it (relative to ``data_root``), or None: none
    recorded, no data root, or a folder outside it (never shown: it is a server path)."""
    if recorded is None or data_root is None or "\x00" in recorded:
        return None
    root = data_root.resolve()
    try:
        folder = (root / recorded).resolve()  # an absolute recorded path replaces the root in the join
    except (OSError, ValueError):
        return None
    return folder.relative_to(root).as_posix() if folder.is_relative_to(root) and folder != root else None
