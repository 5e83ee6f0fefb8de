"""The on-disk cache of a corpus's document vectors: embed once per (chunks, model, params).

Embedding a corpus is the slowest step of building a dense tree (minutes for a
few thousand abstracts on a CPU), so its result is kept as one ``.npy`` under
``<env_path>/embeddings/`` named by the sha256 of

    {"chunks": <chunk set fingerprint>, "embedding": <embedding cache_key>}

The embedding's ``cache_key`` covers the model's files and the params that change
vectors (not batch size or device). Any retriever on the same chunks with the
same model therefore reads the same file: two dense nodes in one tree, or a
rebuild with another similarity metric, embed nothing. Writes are atomic (a
killed run leaves no half file); a file of the wrong shape is ignored and
rewritten. A JSON sidecar records what the key was made of, for a human looking
at the folder. Saved retriever folders do not depend on this cache: they hold
their own copy of the vectors.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import numpy as np

from dashrag.core.digest import digest
from dashrag.core.persistence import atomic_write_json, load_array, save_array
from dashrag.embeddings.base import EmbeddingModel
from dashrag.errors import PersistenceError

if TYPE_CHECKING:
    from dashrag.documents.chunk_set import ChunkSet

log = logging.getLogger(__name__)

CACHE_FOLDER = "embeddings"
PROGRESS_MIN_TEXTS = 500  # show a progress bar from this many texts on
BLOCK_BATCHES = 16  # texts per embedding call = batch_size * BLOCK_BATCHES
WATCHED_BLOCK_BATCHES = 2  # with an on_block watcher (a build job's progress): a report every 2 batches

_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def cache_key(fingerprint: str, embedding: EmbeddingModel) -> str:
    return digest({"chunks": fingerprint, "embedding": embedding.cache_key()})


def cache_path(env_path: Path, fingerprint: str, embedding: EmbeddingModel) -> Path:
    """Where the vectors of these chunks under this embedding live."""
    return Path(env_path) / CACHE_FOLDER / f"{cache_key(fingerprint, embedding)}.npy"


def _lock_for(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(path, threading.Lock())


def read_cached(path: Path, rows: int) -> np.ndarray | None:
    """The cached matrix (memory-mapped) if it exists and has ``rows`` float32 rows, else None."""
    if not path.is_file():
        return None
    try:
        array = load_array(path, mmap=True)
    except PersistenceError as exc:
        log.warning("ignoring unreadable embedding cache %s: %s", path, exc)
        return None
    if array.dtype != np.float32 or array.ndim != 2 or array.shape[0] != rows:
        log.warning("ignoring embedding cache %s: shape %s %s, expected %d float32 rows",
                    path, array.shape, array.dtype, rows)
        return None
    return np.asarray(array)


def embed_with_progress(embedding: EmbeddingModel, texts: Sequence[str], description: str = "embedding",
                        on_block: Callable[[int, int], None] | None = None) -> np.ndarray:
    """``embedding.embed_documents`` in blocks, with a tqdm bar when there are many texts, or
    ``on_block(done, total)`` before the first block and after each (a caller with its own progress display)."""
    from tqdm.auto import tqdm  # here, not at import: a loaded tree's queries never show a bar

    texts = list(texts)
    block = embedding.batch_size * (BLOCK_BATCHES if on_block is None else WATCHED_BLOCK_BATCHES)
    parts = []
    hidden = on_block is not None or len(texts) < PROGRESS_MIN_TEXTS
    with tqdm(total=len(texts), unit="chunk", desc=description, disable=hidden) as bar:
        if on_block is not None:
            on_block(0, len(texts))
        for start in range(0, len(texts), block):
            parts.append(embedding.embed_documents(texts[start:start + block]))
            bar.update(len(parts[-1]))
            if on_block is not None:
                on_block(start + len(parts[-1]), len(texts))
    return np.concatenate(parts) if parts else embedding.embed_documents([])


@contextmanager
def _entry_lock(path: Path) -> Iterator[None]:
    """Hold the entry's advisory lock (``flock`` on ``<key>.lock``), across processes: processes sharing a cache
    (``dashrag serve``'s build workers, builds given one ``--cache-dir``) that need the same vectors at once embed
    them once, the others waiting and then reading them. Released when the holder ends, however it ends."""
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.with_suffix(".lock"))):
        yield


def document_vectors(embedding: EmbeddingModel, chunks: ChunkSet, env_path: Path,
                     on_block: Callable[[int, int], None] | None = None) -> np.ndarray:
    """The (len(chunks), d) float32 vectors of the chunks' texts: from the cache, or embedded and cached (the
    entry's lock taken only when they are missing: a read-only cache that holds them still serves)."""
    path = cache_path(env_path, chunks.fingerprint, embedding)
    with _lock_for(path):
        cached = read_cached(path, len(chunks))
        if cached is not None:
            return cached
        with _entry_lock(path):  # another process may be embedding them: wait for it, then look again
            cached = read_cached(path, len(chunks))
            return cached if cached is not None else _embedded(embedding, chunks, path, on_block)


def _embedded(embedding: EmbeddingModel, chunks: ChunkSet, path: Path,
              on_block: Callable[[int, int], None] | None) -> np.ndarray:
    vectors = embed_with_progress(
        embedding, chunks.texts, f"embedding {len(chunks)} chunks ({embedding.component_name})", on_block
    )
    save_array(path, vectors)
    atomic_write_json(
        path.with_suffix(".json"),
        {
            "chunks_fingerprint": chunks.fingerprint,
            "embedding": embedding.to_config(),
            "embedding_identity": embedding.identity(),
            "embedding_cache_key": embedding.cache_key(),
            "shape": list(vectors.shape),
        },
    )
    return vectors
