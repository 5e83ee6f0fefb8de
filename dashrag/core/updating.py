"""Changing a fitted tree's documents in place: add, replace, skip, remove (docs/updating.md).

``update_documents(root, add, remove)`` plans the change (``documents/changes.py``: the
resulting documents and chunk set, kept chunks first), cuts the new documents with the
tree's own chunker (recorded when it was built), writes the resulting corpus to a *new*
store file beside the old one (a byte copy of it changed by the change alone, in one
transaction: named by the new fingerprint, so the old tree's store is untouched until a
save switches the folder to the new one), injects the new infrastructure and lets every
node bring its state along (:meth:`~dashrag.core.component.ConfigObject.apply_change`,
children first). A store in an external database (PostgreSQL) is not copied: the change is
kept in the infrastructure for the save to commit (``store/external_change.py``).

Nothing is written into a saved folder here: ``save`` (or ``dashrag.update``, which
loads, changes and saves under the folder's save lock) publishes the change atomically.
A change that fails part-way leaves the in-memory tree unusable (load it again); the
store file it wrote is removed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any, Protocol, cast

from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_as
from dashrag.core.infra import Infra
from dashrag.documents.changes import UpdateReport, named_ids, plan_change
from dashrag.documents.model import Chunk, SourceDocument
from dashrag.errors import ConfigError, PersistenceError
from dashrag.store.sqlite_reader import sqlite_path


class DocumentChunker(Protocol):
    def chunk(self, documents: Iterable[SourceDocument]) -> list[Chunk]: ...

    def to_config(self) -> dict[str, Any]: ...


def tree_chunker(infra: Infra, chunker: dict[str, Any] | None) -> DocumentChunker:
    """The chunker that cut the tree's chunks; ``chunker`` (when given) must be the same one."""
    given = None if chunker is None else cast(DocumentChunker, build_as(chunker, ConfigObject, "chunker"))
    if infra.chunker is None:
        if given is None:
            raise ConfigError("this tree was saved before dashrag recorded its chunker; pass the chunker it was "
                              "built with (chunker=..., --chunker) to add documents to it")
        return given
    recorded = cast(DocumentChunker, build_as(infra.chunker, ConfigObject, "chunker"))
    if given is not None and given.to_config() != recorded.to_config():
        raise ConfigError(f"the chunker {json.dumps(given.to_config())} is not the tree's "
                          f"({json.dumps(recorded.to_config())}); an updated tree cuts every document the way it "
                          "was built (rebuild to change it)")
    return recorded


def _store_url(infra: Infra) -> str:
    if infra.store_url is None:
        raise PersistenceError("updating a tree needs its store: this tree was built in memory only")
    if infra.store_change is not None:
        raise PersistenceError("this tree's previous update of its external store is not saved yet; save the "
                               "tree (which commits it) before updating it again")
    return infra.store_url


def update_documents(root: ConfigObject, add: Iterable[SourceDocument] = (), remove: Iterable[str] = (),
                     chunker: dict[str, Any] | None = None, purge: bool = False) -> UpdateReport:
    """Add (or replace, or skip when identical) ``add`` and remove the documents ``remove`` from the fitted
    tree ``root``; every node's state follows, as if fitted on the resulting documents. ``purge``: the new SQLite
    store is a whole file, holding no text of a document removed or replaced, now or before (by default a removed
    document of the store's base is hidden by a delta, its text left in the base until the next whole file:
    docs/updating.md, "Removed text"); an external database deletes the rows either way."""
    from dashrag.core.saved_tree import store_filename
    from dashrag.store.external_change import StoreChange
    from dashrag.store.store import Store, read_only_url, write_changed_store_file

    infra = root.require_infra()
    cutter = tree_chunker(infra, chunker)
    url = _store_url(infra)
    adding, removing = list(add), [str(i) for i in remove]
    store = Store(read_only_url(url), read_only=True)
    try:
        stored = store.documents_with_ids(named_ids(adding, removing))
    finally:
        store.close()
    change = plan_change(stored, infra.chunks, adding, removing, cutter.chunk)
    if not change.report.changed:
        return change.report
    source = sqlite_path(url)
    if source is None:  # an external database: the save commits the change (store/external_change.py)
        pending = StoreChange(url, tuple(change.gone), tuple(change.changed), tuple(change.added),
                              infra.chunks.fingerprint, change.new.fingerprint)
        root.inject_infra(dataclasses.replace(infra, chunks=change.new, documents=None, chunker=cutter.to_config(),
                                              store_change=pending))
        root.apply_change(change)
        return change.report
    target = source.parent / store_filename(change.new.fingerprint)
    existed = target.exists()
    url = write_changed_store_file(source, target, change.gone, change.changed, change.added, change.new.fingerprint,
                                   purge)
    try:
        root.inject_infra(dataclasses.replace(infra, chunks=change.new, store_url=url, documents=None,
                                              chunker=cutter.to_config()))
        root.apply_change(change)
    except BaseException:
        if not existed:
            target.unlink(missing_ok=True)
        raise
    return change.report
