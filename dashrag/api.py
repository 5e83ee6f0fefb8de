"""The Python entry points: build a tree on a corpus, save it, load it back.

``build`` = validate the whole config → construct (pure) → chunk the corpus and
write it to the store → ``inject_infra`` → ``init_model`` (fit). ``load`` never
fits: it reads the config and the corpus from the saved folder, checks the corpus
is the one the tree was built on, and restores each node's state.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_component
from dashrag.core.infra import Infra
from dashrag.core.persistence import node_dirname, read_manifest, verify_snapshot, write_saved_folder
from dashrag.core.retriever import Retriever
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.corpus import Corpus
from dashrag.errors import ConfigError, PersistenceError
from dashrag.store.store import Store, sqlite_url

DEFAULT_CHUNKER: dict[str, Any] = {"component": "RecursiveCharacterChunker", "params": {"chunk_size": 2000, "chunk_overlap": 200}}
SQLITE_PREFIX = "sqlite:///"


def url_without_password(url: str) -> str:
    """A database URL as a saved folder may hold it: never with the password."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(password=None).render_as_string(hide_password=False)


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
                   store_url: str | None = None, cache_dir: str | Path | None = None,
                   overwrite: bool = False) -> Infra:
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
    return Infra(env_path=Path(cache_dir) if cache_dir else workdir, chunks=chunk_set, store_url=store_url,
                 workdir=workdir, overwrite=overwrite)


def build(config: dict | Retriever, corpus: Corpus | str | Path, workdir: str | Path,
          chunker: dict | None = None, store_url: str | None = None, cache_dir: str | Path | None = None,
          overwrite: bool = False) -> Retriever:
    """Validate and build ``config`` (a JSON tree), fit it on ``corpus``; the store goes in
    ``workdir``, caches in ``cache_dir`` (default: ``workdir``). ``overwrite`` lets engine-backed
    indexes replace a collection or table that holds something else (never done otherwise)."""
    root = build_component(config, "retriever") if isinstance(config, dict) else config
    infra = prepare_corpus(corpus, workdir, chunker, store_url, cache_dir, overwrite)
    root.inject_infra(infra)
    try:
        root.init_model()
    except BaseException:
        root.close()  # a failed build releases what it opened (engine connections, embedded storage locks)
        raise
    return root  # type: ignore[return-value]


def save(root: ConfigObject, folder: str | Path) -> Path:
    """Save a fitted tree to ``folder`` atomically (the previous save survives a crash)."""
    folder = Path(folder)
    infra = root.require_infra()
    folder.mkdir(parents=True, exist_ok=True)
    store_ref = infra.store_url
    if store_ref and store_ref.startswith(SQLITE_PREFIX):
        source = Path(store_ref[len(SQLITE_PREFIX):])
        target = folder / store_filename(infra.chunks.fingerprint)
        if source.resolve() != target.resolve() and not target.exists():
            tmp = target.with_name(f".{target.name}.tmp")
            shutil.copyfile(source, tmp)
            os.replace(tmp, target)
        store_ref = target.name  # relative: the folder can be moved
    elif store_ref:
        store_ref = url_without_password(store_ref)  # a server's password comes from PGPASSWORD / .pgpass

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


def load(folder: str | Path, store_url: str | None = None) -> Retriever:
    """Load a saved tree without refitting; refuses a folder whose corpus or format does not match."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    snapshot = verify_snapshot(folder, manifest)
    try:
        root = build_component(manifest["config"], "retriever")
    except ConfigError as exc:
        raise PersistenceError(f"{folder}: the saved config is not valid here: {exc}") from None
    if store_url is None:
        ref = manifest.get("store")
        if not ref:
            raise PersistenceError(f"{folder}: the manifest names no store; pass store_url")
        store_url = ref if "://" in ref else sqlite_url(folder / ref)
        if "://" not in ref and not (folder / ref).is_file():
            raise PersistenceError(f"{folder / ref}: the store file named in the manifest is missing")
    store = Store(store_url)
    try:
        chunk_set = store.read_chunk_set()
    finally:
        store.close()
    if chunk_set.fingerprint != manifest["corpus_fingerprint"]:
        raise PersistenceError(
            f"{folder}: saved for corpus {manifest['corpus_fingerprint'][:12]}, but the store holds corpus "
            f"{chunk_set.fingerprint[:12]} (a folder saved for another corpus)"
        )
    root.inject_infra(Infra(env_path=folder, chunks=chunk_set, store_url=store_url, workdir=folder))
    try:
        for path, node in reversed(list(root.iter_nodes())):  # children before their parents
            node_dir = snapshot / "nodes" / node_dirname(path)
            if not node_dir.is_dir():
                raise PersistenceError(f"{node_dir}: state folder of node {path} is missing")
            node.load_state(node_dir)
    except BaseException:
        root.close()  # a refused load releases what it opened
        raise
    return root  # type: ignore[return-value]
