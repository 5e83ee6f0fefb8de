"""The Python entry points: build a tree on a corpus, save it, load it back.

``build`` = validate the whole config → construct (pure) → chunk the corpus and
write it to the store → ``inject_infra`` → ``init_model`` (fit). ``save`` and
``load`` live in :mod:`dashrag.core.saved_tree` (a retriever's ``save`` method needs
them, and core does not import this module); they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from dashrag.core.factory import build_as
from dashrag.core.infra import Infra
from dashrag.core.persistence import read_manifest, save_lock
from dashrag.core.retriever import Retriever
from dashrag.core.saved_tree import load, save, store_filename
from dashrag.documents.changes import UpdateReport
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import SourceDocument
from dashrag.errors import ConfigError, PersistenceError
from dashrag.presets import load_preset

DEFAULT_CHUNKER: dict[str, Any] = {
    "component": "RecursiveCharacterChunker",
    "params": {"chunk_size": 2000, "chunk_overlap": 200},
}


def _write_sqlite_store(folder: Path, corpus: Corpus, chunk_set: ChunkSet) -> str:
    """The store for this corpus in ``folder``: reused if present, else written to a temp file and renamed in."""
    from dashrag.store.store import write_store_file  # SQLAlchemy: only building writes a store

    return write_store_file(folder / store_filename(chunk_set.fingerprint), corpus.documents, chunk_set.chunks,
                            chunk_set.fingerprint)


def prepare_corpus(
    corpus: Corpus | str | Path,
    workdir: str | Path,
    chunker: dict | None = None,
    store_url: str | None = None,
    cache_dir: str | Path | None = None,
    overwrite: bool = False,
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

    cutter = build_as(chunker or DEFAULT_CHUNKER, Chunker, "chunker")
    chunk_set = ChunkSet(cutter.chunk(corpus.documents))
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
    return Infra(env_path=Path(cache_dir) if cache_dir else workdir, chunks=chunk_set, store_url=store_url,
                 workdir=workdir, overwrite=overwrite, chunker=cutter.to_config())


def build(
    config: dict | str | Retriever,
    corpus: Corpus | str | Path,
    workdir: str | Path,
    chunker: dict | None = None,
    store_url: str | None = None,
    cache_dir: str | Path | None = None,
    overwrite: bool = False,
) -> Retriever:
    """Validate and build ``config`` (a JSON tree, or the name of a preset in components/ such as
    ``"keyword"``), fit it on ``corpus``; the store goes in ``workdir``, caches in ``cache_dir``
    (default: ``workdir``). ``overwrite`` lets engine-backed indexes replace a collection or
    table that holds something else (never done otherwise)."""
    if isinstance(config, str):
        config = load_preset(config)
    if isinstance(config, dict):
        root = build_as(config, Retriever, "retriever")
    elif isinstance(config, Retriever):
        root = config
    else:
        raise ConfigError(f"build takes a config dict, a preset name or a built retriever, not {type(config).__name__}")
    infra = prepare_corpus(corpus, workdir, chunker, store_url, cache_dir, overwrite)
    root.inject_infra(infra)
    try:
        root.init_model()
    except BaseException:
        root.close()  # a failed build releases what it opened (engine connections, embedded storage locks)
        raise
    return root


def _documents_to_add(add: Corpus | str | Path | Iterable[SourceDocument] | None) -> list[SourceDocument]:
    if add is None:
        return []
    if isinstance(add, (str, Path)):
        return list(Corpus.from_path(add).documents)
    return list(add)


def update_tree(
    folder: str | Path,
    *,
    add: Corpus | str | Path | Iterable[SourceDocument] | None = None,
    remove: Iterable[str] = (),
    chunker: dict | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> UpdateReport:
    """Change the saved tree in ``folder`` in place: add ``add`` (a Corpus, a corpus path, or
    SourceDocuments; an id already in the tree is replaced when its content changed, skipped when
    identical) and remove the documents ``remove``. All or nothing: the folder switches from the old
    tree to the new one atomically (a crash leaves one or the other, readers get one or the other),
    and two updates of one folder run one after the other (its save lock). A bad request (an unknown
    id, a document without an id, another chunker, a folder that holds no saved tree) changes nothing."""
    folder = Path(folder)
    documents = _documents_to_add(add)
    removing = [str(i) for i in remove]
    read_manifest(folder)  # a folder that holds no saved tree: an error before the lock creates anything
    report = progress or (lambda stage, done, total: None)
    with save_lock(folder):
        report("loading", 0, 1)
        root = load(folder)
        try:
            report("updating", 0, 1)
            outcome = root.update_documents(documents, removing, chunker)
            if outcome.changed:
                report("saving", 0, 1)
                save(root, folder)
                root.release_replaced()  # published: the old engine objects go (docs/updating.md)
        finally:
            root.close()
    report("done", 1, 1)
    return outcome


update = update_tree  # dashrag.update(folder, add=..., remove=...)

__all__ = ["build", "load", "prepare_corpus", "save", "update", "update_tree"]
