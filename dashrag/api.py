"""The Python entry points: build a tree on a corpus, save it, load it back.

``build`` = validate the whole config → construct (pure) → chunk the corpus and
write it to the store → ``inject_infra`` → ``init_model`` (fit). ``load`` never
fits: it reads the config and the corpus from the saved folder, checks the corpus
is the one the tree was built on, and restores each node's state.

``load`` never writes either: the store is opened read-only, and only a store file
*inside* the saved folder is read unless the caller names a store URL explicitly
(a manifest edited to name another database cannot make a load connect to it).
``save`` holds the folder's save lock for the store copy and the snapshot
(:mod:`dashrag.core.persistence`), so concurrent saves of one folder serialise.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_component
from dashrag.core.infra import Infra
from dashrag.core.persistence import node_dirname, read_consistently, save_lock, write_saved_folder
from dashrag.core.retriever import Retriever
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.corpus import Corpus
from dashrag.errors import ConfigError, PersistenceError, excerpt
from dashrag.presets import load_preset
from dashrag.store.store import Store, display_url, read_only_url, sqlite_url

DEFAULT_CHUNKER: dict[str, Any] = {"component": "RecursiveCharacterChunker", "params": {"chunk_size": 2000, "chunk_overlap": 200}}
SQLITE_PREFIX = "sqlite:///"


STORE_FILE_PATTERN = re.compile(r"store-[0-9a-f]{1,64}\.sqlite")


def store_filename(fingerprint: str) -> str:
    return f"store-{fingerprint[:16]}.sqlite"


def _write_sqlite_store(folder: Path, corpus: Corpus, chunk_set: ChunkSet) -> str:
    """The store for this corpus in ``folder``: reused if present, else written to a temp file and renamed in."""
    target = folder / store_filename(chunk_set.fingerprint)
    if not target.exists():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".store-", suffix=".sqlite.tmp")
        os.close(fd)
        try:
            store = Store(sqlite_url(Path(tmp)))
            store.write_corpus(corpus.documents, chunk_set.chunks, chunk_set.fingerprint)
            store.close()
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return sqlite_url(target)


def prepare_corpus(corpus: Corpus | str | Path, workdir: str | Path, chunker: dict | None = None,
                   store_url: str | None = None, cache_dir: str | Path | None = None) -> Infra:
    """Chunk the corpus, write it to the store, and return the infrastructure a tree runs on.

    Caches (embeddings) go in ``cache_dir``, default ``workdir``: point several builds
    at one cache folder and a corpus is embedded once per model, whatever the tree.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if not isinstance(corpus, Corpus):
        corpus = Corpus.from_path(corpus)
    chunk_set = ChunkSet(build_component(chunker or DEFAULT_CHUNKER, "chunker").chunk(corpus.documents))
    if store_url is None:
        store_url = _write_sqlite_store(workdir, corpus, chunk_set)
    else:
        store = Store(store_url)
        if store.is_empty():
            store.write_corpus(corpus.documents, chunk_set.chunks, chunk_set.fingerprint)
        elif store.read_chunk_set().fingerprint != chunk_set.fingerprint:
            raise PersistenceError(f"the store {store.display_url} holds another corpus")
        store.close()
    return Infra(env_path=Path(cache_dir) if cache_dir else workdir, chunks=chunk_set, store_url=store_url)


def build(config: dict | str | Retriever, corpus: Corpus | str | Path, workdir: str | Path,
          chunker: dict | None = None, store_url: str | None = None, cache_dir: str | Path | None = None) -> Retriever:
    """Validate and build ``config`` (a JSON tree, or the name of a preset in components/ such as
    ``"keyword"``), fit it on ``corpus``; the store goes in ``workdir``, caches in ``cache_dir``
    (default: ``workdir``)."""
    if isinstance(config, str):
        config = load_preset(config)
    if isinstance(config, dict):
        root = build_component(config, "retriever")
    elif isinstance(config, Retriever):
        root = config
    else:
        raise ConfigError(f"build takes a config dict, a preset name or a built retriever, not {type(config).__name__}")
    infra = prepare_corpus(corpus, workdir, chunker, store_url, cache_dir)
    root.inject_infra(infra)
    root.init_model()
    return root  # type: ignore[return-value]


def save(root: ConfigObject, folder: str | Path) -> Path:
    """Save a fitted tree to ``folder`` atomically (the previous save survives a crash), one save
    of the folder at a time (the folder's advisory lock; a second save waits for the first)."""
    folder = Path(folder)
    infra = root.require_infra()
    with save_lock(folder):
        store_ref = display_url(infra.store_url) if infra.store_url else None
        if infra.store_url and infra.store_url.startswith(SQLITE_PREFIX):
            source = Path(infra.store_url[len(SQLITE_PREFIX):])
            target = folder / store_filename(infra.chunks.fingerprint)
            if source.resolve() != target.resolve() and not target.exists():
                tmp = target.with_name(f".{target.name}.tmp")
                shutil.copyfile(source, tmp)
                os.replace(tmp, target)
            store_ref = target.name  # relative: the folder can be moved

        def write_nodes(snapshot: Path) -> None:
            for path, node in root.iter_nodes():
                node_dir = snapshot / "nodes" / node_dirname(path)
                node_dir.mkdir(parents=True)
                node.save_state(node_dir)

        write_saved_folder(folder, write_nodes, {
            "config": root.to_config(),
            "corpus_fingerprint": infra.chunks.fingerprint,
            "store": store_ref,
            "saved_at": datetime.now(timezone.utc).isoformat(),
        })
    return folder


def _store_in_folder(folder: Path, ref: str | None) -> str:
    """The URL of the store file the manifest names, which must lie inside the saved folder."""
    if not ref:
        raise PersistenceError(f"{folder}: the manifest names no store; pass store_url")
    if not STORE_FILE_PATTERN.fullmatch(ref):
        raise PersistenceError(
            f"{folder}: the manifest names the store {excerpt(ref)}, which is not a store file inside the folder; "
            "pass its URL explicitly (store_url=..., or --store) to load from it")
    path = folder / ref
    if not path.is_file():
        raise PersistenceError(f"{path}: the store file named in the manifest is missing")
    return sqlite_url(path)


def _read_chunk_set(store_url: str) -> ChunkSet:
    store = Store(read_only_url(store_url), read_only=True)
    try:
        return store.read_chunk_set()
    finally:
        store.close()


def load(folder: str | Path, store_url: str | None = None) -> Retriever:
    """Load a saved tree without refitting; refuses a folder whose corpus or format does not match.

    Nothing is written, whatever the folder holds: the store is opened read-only, and
    a load running while another process saves the folder gets the old or the new tree.
    """
    folder = Path(folder)

    def read(manifest: dict[str, Any], snapshot: Path) -> Retriever:
        try:
            root = build_component(manifest["config"], "retriever")
        except ConfigError as exc:
            raise PersistenceError(f"{folder}: the saved config is not valid here: {exc}") from None
        url = store_url if store_url is not None else _store_in_folder(folder, manifest.get("store"))
        chunk_set = _read_chunk_set(url)
        if chunk_set.fingerprint != manifest["corpus_fingerprint"]:
            raise PersistenceError(
                f"{folder}: saved for corpus {manifest['corpus_fingerprint'][:12]}, but the store holds corpus "
                f"{chunk_set.fingerprint[:12]} (a folder saved for another corpus)"
            )
        root.inject_infra(Infra(env_path=folder, chunks=chunk_set, store_url=url))
        try:
            for path, node in reversed(list(root.iter_nodes())):  # children before their parents
                node_dir = snapshot / "nodes" / node_dirname(path)
                if not node_dir.is_dir():
                    raise PersistenceError(f"{node_dir}: state folder of node {path} is missing")
                node.load_state(node_dir)
        except BaseException:
            root.close()
            raise
        return root  # type: ignore[return-value]

    return read_consistently(folder, read)
