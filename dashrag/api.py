"""The Python entry points: build a tree on a corpus, save it, load it back.

``build`` = validate the whole config → construct (pure) → chunk the corpus and
write it to the store → ``inject_infra`` → ``init_model`` (fit). ``save`` and
``load`` live in :mod:`dashrag.core.saved_tree` (a retriever's ``save`` method needs
them, and core does not import this module); they are re-exported here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from dashrag.core.factory import build_as
from dashrag.core.infra import Infra
from dashrag.core.retriever import Retriever
from dashrag.core.saved_tree import load, save, store_filename
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.corpus import Corpus
from dashrag.errors import ConfigError, PersistenceError
from dashrag.presets import load_preset
from dashrag.store.sqlite_reader import sqlite_url

DEFAULT_CHUNKER: dict[str, Any] = {
    "component": "RecursiveCharacterChunker",
    "params": {"chunk_size": 2000, "chunk_overlap": 200},
}


def _write_sqlite_store(folder: Path, corpus: Corpus, chunk_set: ChunkSet) -> str:
    """The store for this corpus in ``folder``: reused if present, else written to a temp file and renamed in."""
    target = folder / store_filename(chunk_set.fingerprint)
    if not target.exists():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".store-", suffix=".sqlite.tmp")
        os.close(fd)
        try:
            from dashrag.store.store import Store  # SQLAlchemy: only building writes a store

            store = Store(sqlite_url(Path(tmp)))
            store.write_corpus(corpus.documents, chunk_set.chunks, chunk_set.fingerprint)
            store.close()
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return sqlite_url(target)


def prepare_corpus(
    corpus: Corpus | str | Path,
    workdir: str | Path,
    chunker: dict | None = None,
    store_url: str | None = None,
    cache_dir: str | Path | None = None,
) -> Infra:
    """Chunk the corpus, write it to the store, and return the infrastructure a tree runs on.

    Caches (embeddings) go in ``cache_dir``, default ``workdir``: point several builds
    at one cache folder and a corpus is embedded once per model, whatever the tree.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if not isinstance(corpus, Corpus):
        corpus = Corpus.from_path(corpus)
    from dashrag.chunkers.base import Chunker  # building chunks; loading a saved tree does not

    chunk_set = ChunkSet(build_as(chunker or DEFAULT_CHUNKER, Chunker, "chunker").chunk(corpus.documents))
    if store_url is None:
        store_url = _write_sqlite_store(workdir, corpus, chunk_set)
    else:
        from dashrag.store.store import Store

        store = Store(store_url)
        if store.is_empty():
            store.write_corpus(corpus.documents, chunk_set.chunks, chunk_set.fingerprint)
        elif store.read_chunk_set().fingerprint != chunk_set.fingerprint:
            raise PersistenceError(f"the store {store.display_url} holds another corpus")
        store.close()
    return Infra(env_path=Path(cache_dir) if cache_dir else workdir, chunks=chunk_set, store_url=store_url)


def build(
    config: dict | str | Retriever,
    corpus: Corpus | str | Path,
    workdir: str | Path,
    chunker: dict | None = None,
    store_url: str | None = None,
    cache_dir: str | Path | None = None,
) -> Retriever:
    """Validate and build ``config`` (a JSON tree, or the name of a preset in components/ such as
    ``"keyword"``), fit it on ``corpus``; the store goes in ``workdir``, caches in ``cache_dir``
    (default: ``workdir``)."""
    if isinstance(config, str):
        config = load_preset(config)
    if isinstance(config, dict):
        root = build_as(config, Retriever, "retriever")
    elif isinstance(config, Retriever):
        root = config
    else:
        raise ConfigError(f"build takes a config dict, a preset name or a built retriever, not {type(config).__name__}")
    infra = prepare_corpus(corpus, workdir, chunker, store_url, cache_dir)
    root.inject_infra(infra)
    root.init_model()
    return root


__all__ = ["build", "load", "prepare_corpus", "save"]
