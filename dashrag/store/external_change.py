"""Updating a tree whose store is an external database (``--store postgresql://...``; docs/updating.md).

An SQLite store inside the saved folder is updated by writing a new file beside the old one, which the
folder's manifest switches to. An external database holds *one* corpus, shared by whoever reads it, and
its change cannot be switched together with the folder: so the change waits as a :class:`StoreChange`
until the save, which writes the new snapshot and a *pending* manifest naming it, commits the change in
one transaction (:meth:`StoreChange.commit`), and only then switches the manifest. A load that finds the
store holding the pending manifest's corpus takes the pending one (the commit happened, the switch did
not: a kill between them rolls forward), so a reader, or a crash at any moment, sees the old tree or the
new one.

Two writers are serialised twice: the whole update (load, change, save) runs under
:func:`writer_lock`, a PostgreSQL session advisory lock on the store's database, so a second writer
waits and then reads what the first published; and the commit reads the store's fingerprint ``FOR
UPDATE`` and refuses a store that no longer holds the corpus the change was planned on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from dashrag.documents.model import Chunk, SourceDocument
from dashrag.errors import PersistenceError
from dashrag.store.store import Store

#: The advisory lock every dashrag update of a store's database takes (one store per database: its tables
#: have fixed names). A 64-bit key derived from a name, so no other application's key is likely to match.
WRITER_LOCK_KEY = int.from_bytes(hashlib.sha256(b"dashrag: one update of this store at a time").digest()[:8],
                                 "big", signed=True)
#: How long an update waits for another update of the same store before giving up (as the folder's lock).
WRITER_LOCK_TIMEOUT_S = float(os.environ.get("DASHRAG_SAVE_LOCK_TIMEOUT", "600"))


@dataclass(frozen=True)
class StoreChange:
    """One change of an external store, planned on the corpus ``old_fingerprint`` and not yet committed:
    the documents ``gone`` (and their chunks) to delete, ``documents`` and their ``chunks`` to append,
    ``new_fingerprint`` to record."""

    url: str
    gone: tuple[str, ...]
    documents: tuple[SourceDocument, ...]
    chunks: tuple[Chunk, ...]
    old_fingerprint: str
    new_fingerprint: str

    def commit(self) -> None:
        """Apply the change in one transaction (all of it or none), if the store still holds the old corpus.
        A failure after which the store holds the new corpus (the commit went through, its answer was lost)
        is a success."""
        store = Store(self.url)
        try:
            store.apply_change(self.gone, self.documents, self.chunks, self.new_fingerprint,
                               expected=self.old_fingerprint)
        except BaseException:
            if self.held_fingerprint() != self.new_fingerprint:
                raise
        finally:
            store.close()

    def held_fingerprint(self) -> str | None:
        """The fingerprint of the corpus the store holds now (None: it cannot be read)."""
        try:
            store = Store(self.url, read_only=True)
        except PersistenceError:
            return None
        try:
            return store.held_fingerprint()
        except PersistenceError:
            return None
        finally:
            store.close()


@contextmanager
def writer_lock(url: str | None, timeout: float | None = None) -> Iterator[None]:
    """Hold the store's writer lock for the block: on PostgreSQL a session advisory lock, released when the
    block ends or the process dies (its connection closes); for another database or no URL, nothing (an
    SQLite file serialises its writers itself, and the commit's fingerprint check stands for the rest)."""
    if url is None:
        yield
        return
    store = Store(url, read_only=True)
    try:
        if store.engine.dialect.name != "postgresql":
            yield
            return
        wait_ms = int(1000 * (WRITER_LOCK_TIMEOUT_S if timeout is None else timeout))
        try:
            connection = store.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        except SQLAlchemyError as exc:
            raise PersistenceError(f"cannot open the store {store.display_url}: {exc.__class__.__name__}") from None
        try:
            try:
                connection.execute(text(f"SET lock_timeout = {wait_ms}"))
                connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": WRITER_LOCK_KEY})
            except SQLAlchemyError as exc:
                if "lock timeout" in str(getattr(exc, "orig", exc)):
                    raise PersistenceError(
                        f"the store {store.display_url}: another update held its lock for {wait_ms / 1000:.0f}s; "
                        "try again when it has finished") from None
                raise PersistenceError(f"the store {store.display_url} cannot be locked for an update: "
                                       f"{exc.__class__.__name__}") from None
            try:
                yield
            finally:
                try:
                    connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": WRITER_LOCK_KEY})
                except SQLAlchemyError:  # a broken connection: store.close() below ends the session, and its lock
                    pass
        finally:
            connection.close()
    finally:
        store.close()  # closes the pool's connections: a session that failed to unlock releases its lock too
