"""What the factory hands every node after building it: the infrastructure it runs on.

Building a tree is pure (validate, construct); only ``inject_infra`` connects it to
a corpus and a working folder. Keeping that separate is what lets the same JSON be
validated in a UI, built in a test, and fitted or loaded in a service.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from dashrag.core.progress import Progress, no_progress

if TYPE_CHECKING:
    from dashrag.documents.chunk_set import ChunkSet
    from dashrag.store.external_change import StoreChange


@dataclass(frozen=True)
class Infra:
    """``env_path``: a working folder for caches (embeddings); ``chunks``: the corpus's chunks;
    ``store_url``: the SQL store those chunks were read from or written to (None: in memory only);
    ``documents``: the source documents, where the caller has them;
    ``workdir``: the build's working folder, or the saved folder a tree was loaded from (where
    state that lives beside a saved tree, such as an embedded Qdrant, is kept; default ``env_path``);
    ``overwrite``: the user allowed a build to replace engine objects (collections, tables) that
    hold something else (never done otherwise); ``progress``: where a fitting node reports the
    batches of a long stage (core/progress.py); ``chunker``: the config of the chunker that cut
    ``chunks`` (recorded in a saved folder, so an update cuts new documents the same way; None: not
    known, a folder saved before it was recorded); ``store_change``: an update of an external store
    (``store_url`` a database, not a file in the folder) that the next save commits before it switches the
    folder to the new tree (store/external_change.py; None: the store holds ``chunks``); ``source_folder``: the
    folder of files the corpus was read from, as the face that built the tree recorded it (the manifest's
    ``source_folder``, kept by every save, so ``dashrag sync TREE`` and the page's Sync know it; None: none)."""

    env_path: Path
    chunks: ChunkSet
    store_url: str | None = None
    documents: tuple[Any, ...] | None = None
    workdir: Path | None = None
    overwrite: bool = False
    progress: Progress = no_progress
    chunker: dict[str, Any] | None = None
    store_change: StoreChange | None = None
    source_folder: str | None = None

    @property
    def folder(self) -> Path:
        return self.workdir if self.workdir is not None else self.env_path

    @classmethod
    def of(cls, env_path: str | Path, chunks: Any, persistence: Any = None,
           documents: Sequence[Any] | None = None) -> Infra:
        """From the reference's ``inject_infra(env_path, chunks, persistence, documents)`` arguments."""
        from dashrag.documents.chunk_set import ChunkSet

        if chunks is None:
            raise TypeError("inject_infra(env_path, chunks, ...) needs the chunks")
        if isinstance(chunks, Mapping):  # the reference's Dict[document id, Dict[position, Chunk]]
            chunks = [chunk for by_position in chunks.values() for chunk in by_position.values()]
        chunk_set = chunks if isinstance(chunks, ChunkSet) else ChunkSet(chunks)
        url = persistence if isinstance(persistence, str) or persistence is None else persistence.url
        return cls(Path(env_path), chunk_set, url, None if documents is None else tuple(documents))
