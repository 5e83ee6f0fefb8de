"""The chunks' texts of a tree whose store is an external database (PostgreSQL), read when shown, as of its load.

Why: a load of a PostgreSQL-stored tree read every chunk's text (O(corpus) bytes through the driver, one Python
string each) so that a reader kept the corpus it was loaded with while another writer changed the database in
place: at a million documents most of an update's time (docs/scale.md, "PostgreSQL-stored trees at 1M"). An
SQLite-stored tree reads its texts when shown from its file held open (``store/sqlite_reader.SqliteChunkTexts``);
the database has no old file to hold, but it has snapshots.

How: one connection opens a REPEATABLE READ transaction and exports its snapshot (``pg_export_snapshot()``), and
stays idle in it for the tree's life (closed with this object); every read (the load's fingerprint and ids, then
the texts a query shows) runs in a short transaction on a second connection that imports that snapshot (``SET
TRANSACTION SNAPSHOT``), so a loaded tree sees the rows as they were at its load whatever later updates commit: a
reader gets the old tree or the new one, as when it held every text. The holder reads no table, so it holds no
table lock (a later update's ``ALTER TABLE`` does not wait for it); what it holds is the snapshot: the rows it
sees are kept from vacuum until it closes. A server that ends the holder's session (a restart,
``idle_in_transaction_session_timeout``) ends the snapshot: a later read is a clear error saying to load again.
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from dashrag.documents.chunk_set import HeldTexts
from dashrag.errors import PersistenceError, excerpt
from dashrag.store.store import Store

SNAPSHOT_ID = re.compile(r"[0-9A-F]+-[0-9A-F]+(-[0-9]+)?")  # what pg_export_snapshot() returns
FINGERPRINT = "SELECT value FROM store_info WHERE key = 'fingerprint'"
#: The md5 of every chunk id as 8 big-endian bytes, ascending: the store's ids compared with the columns' (:meth:
#: SnapshotChunkTexts.holds_ids) without sending them (one heap or index scan in the server, 16 bytes back).
IDS_DIGEST = "SELECT md5(string_agg(int8send(id::bigint), ''::bytea ORDER BY id)) FROM chunks"
TEXTS = "SELECT id, text FROM chunks WHERE id = ANY(:ids)"
TEXTS_AFTER = "SELECT id, text FROM chunks WHERE id > :after ORDER BY id LIMIT :count"
TEXT_PAGE = 2000


def texts_as_loaded(store: Store) -> SnapshotChunkTexts | WholeTexts:
    """The texts of ``store``'s chunks as they are now, for a loaded tree to read when shown (this object owns
    ``store`` and closes it): a held snapshot on PostgreSQL, the texts read whole on another database."""
    if store.engine.dialect.name == "postgresql":
        return SnapshotChunkTexts(store)
    return WholeTexts(store)


class WholeTexts(HeldTexts):
    """The texts of a store on a database without exported snapshots (an SQLite file named by its URL), read
    whole with the store's fingerprint in one transaction and held (what every external store's load did)."""

    def __init__(self, store: Store):
        try:
            self._fingerprint, rows = store.fingerprint_and_texts()
        finally:
            store.close()
        super().__init__(dict(rows))
        self._ids = np.fromiter((i for i, _ in rows), dtype=np.int64, count=len(rows))

    def fingerprint(self) -> str | None:
        return self._fingerprint

    def holds_ids(self, ids: np.ndarray) -> bool:
        return np.array_equal(self._ids, ids)

    def close(self) -> None:
        """Nothing held outside this process."""


class SnapshotChunkTexts:
    """:class:`~dashrag.documents.chunk_set.ChunkTexts` of an external store, as the store was when this was
    made (the module's docstring). One reader connection shared by the threads that query the tree (a lock
    keeps each read whole)."""

    def __init__(self, store: Store):
        self.display_url = store.display_url
        self._connections: list[Connection] = []
        self._finalizer = weakref.finalize(self, _close_all, self._connections, store)  # also when dropped unclosed
        try:
            holder = self._connected(store.engine)
            holder.begin()
            exported = str(holder.execute(text("SELECT pg_export_snapshot()")).scalar())
            self._reader = self._connected(store.engine)
        except SQLAlchemyError as exc:
            self.close()
            raise self._failed("cannot hold a snapshot of", exc) from None
        if not SNAPSHOT_ID.fullmatch(exported):  # interpolated below (SET TRANSACTION takes no parameter)
            self.close()
            raise PersistenceError(f"the store {self.display_url} exported a snapshot named {excerpt(exported)}")
        self._snapshot = exported
        self._lock = threading.Lock()

    def _connected(self, engine: Engine) -> Connection:
        connection = engine.connect().execution_options(isolation_level="REPEATABLE READ")
        self._connections.append(connection)
        return connection

    def _failed(self, what: str, exc: SQLAlchemyError) -> PersistenceError:
        reason = getattr(exc, "orig", None) or exc
        first_line = str(reason).splitlines()[0] if str(reason) else type(reason).__name__
        return PersistenceError(f"{what} the store {self.display_url}: {excerpt(first_line, 160)}")

    @contextmanager
    def _in_snapshot(self) -> Iterator[Connection]:
        """A short transaction of the reader that sees the held snapshot."""
        with self._lock:
            try:
                with self._reader.begin():
                    self._reader.execute(text(f"SET TRANSACTION SNAPSHOT '{self._snapshot}'"))
                    yield self._reader
            except SQLAlchemyError as exc:
                if "snapshot" in str(getattr(exc, "orig", exc)).lower():
                    raise PersistenceError(
                        f"the store {self.display_url}: the snapshot this tree was loaded with is gone (the server "
                        "ended the session that held it: a restart, or idle_in_transaction_session_timeout); load "
                        "the tree again") from None
                raise self._failed("cannot read", exc) from None

    def fingerprint(self) -> str | None:
        """The fingerprint the store records for the corpus of the snapshot (None: none recorded)."""
        with self._in_snapshot() as reader:
            value = reader.execute(text(FINGERPRINT)).scalar()
        return None if value is None else str(value)

    def holds_ids(self, ids: np.ndarray) -> bool:
        """Whether the snapshot's chunk ids are exactly ``ids`` (ascending): their digests compared, computed in
        the server for the store's, here for ``ids``: O(corpus) in the server's C, 16 bytes over the wire."""
        with self._in_snapshot() as reader:
            stored = reader.execute(text(IDS_DIGEST)).scalar()
        local = hashlib.md5(np.asarray(ids, dtype=">i8").tobytes()).hexdigest()
        return bool(stored == local)

    def texts_of(self, ids: Sequence[int]) -> Mapping[int, str]:
        with self._in_snapshot() as reader:
            rows = reader.execute(text(TEXTS), {"ids": [int(i) for i in ids]}).all()
        return {int(i): str(t) for i, t in rows}

    def all_texts(self) -> Iterator[tuple[int, str]]:
        after = -(2**63)
        while True:
            with self._in_snapshot() as reader:
                page = list(reader.execute(text(TEXTS_AFTER), {"after": after, "count": TEXT_PAGE}).tuples())
            yield from ((int(i), str(t)) for i, t in page)
            if len(page) < TEXT_PAGE:
                return
            after = int(page[-1][0])

    def close(self) -> None:
        """End the snapshot and close the store's connections (the rows it saw may then be vacuumed)."""
        self._finalizer()


def _close_all(connections: list[Connection], store: Store) -> None:
    while connections:
        try:
            connections.pop().close()
        except SQLAlchemyError:  # a connection the server already ended: nothing left to release
            pass
    store.close()
