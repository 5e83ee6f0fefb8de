"""Saving a fitted tree to a folder and loading it back without refitting.

``save`` copies the SQLite store beside the state (named by the corpus
fingerprint, referenced relatively so the folder can move) and writes one
sub-folder per node through :func:`write_saved_folder` (atomic: the previous save
survives a crash). ``load`` never fits: it reads the config and the corpus from
the saved folder, checks the corpus is the one the tree was built on, and
restores each node's state, children before their parents.

This lives in core (not in ``dashrag.api``) because ``Retriever.save`` needs it
and core imports no entry point (docs/design.md, import contracts).
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_as
from dashrag.core.infra import Infra
from dashrag.core.persistence import node_dirname, read_manifest, verify_snapshot, write_saved_folder
from dashrag.core.retriever import Retriever
from dashrag.errors import ConfigError, PersistenceError
from dashrag.store.store import Store, sqlite_url

SQLITE_PREFIX = "sqlite:///"


def store_filename(fingerprint: str) -> str:
    return f"store-{fingerprint[:16]}.sqlite"


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

    def write_nodes(snapshot: Path) -> None:
        for path, node in root.iter_nodes():
            node_dir = snapshot / "nodes" / node_dirname(path)
            node_dir.mkdir(parents=True)
            node.save_state(node_dir)

    write_saved_folder(folder, write_nodes, {
        "config": root.to_config(),
        "corpus_fingerprint": infra.chunks.fingerprint,
        "store": store_ref,
        "saved_at": datetime.now(UTC).isoformat(),
    })
    return folder


def load(folder: str | Path, store_url: str | None = None) -> Retriever:
    """Load a saved tree without refitting; refuses a folder whose corpus or format does not match."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    snapshot = verify_snapshot(folder, manifest)
    try:
        root = build_as(manifest["config"], Retriever, "retriever")
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
    root.inject_infra(Infra(env_path=folder, chunks=chunk_set, store_url=store_url))
    for path, node in reversed(list(root.iter_nodes())):  # children before their parents
        node_dir = snapshot / "nodes" / node_dirname(path)
        if not node_dir.is_dir():
            raise PersistenceError(f"{node_dir}: state folder of node {path} is missing")
        node.load_state(node_dir)
    return root
