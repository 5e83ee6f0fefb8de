"""The document store: one corpus's documents and chunks, plus retriever records.

A store is addressed by a SQLAlchemy URL (``sqlite:///path`` by default, any
other database SQLAlchemy speaks otherwise). ``write_corpus`` fills an *empty*
store in one transaction, so a failure leaves nothing half-written; a saved
retriever then reads its chunks back from here instead of re-chunking.

A store opened ``read_only`` (what loading a saved folder does) creates no table
and, for an SQLite file, is opened through SQLite's ``mode=ro`` URI, so reading a
damaged or empty file fails without growing or touching it. Every database error
becomes a :class:`~dashrag.errors.PersistenceError` naming the store with its
password hidden; a URL whose driver is not installed is one too, naming the driver.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Sequence

from sqlalchemy import create_engine, delete, event, func, insert, inspect, null, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session
from sqlalchemy.sql import text

from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.fingerprint import ADDITIVE
from dashrag.documents.model import Chunk, SourceDocument, normalise_categories
from dashrag.errors import PersistenceError, excerpt
from dashrag.store import segments
from dashrag.store.models import Base, ChunkRow, DocumentRow, RetrieverRecord, StoreInfo
from dashrag.store.sqlite_reader import read_only_uri, sqlite_url
from dashrag.urls import hide_url_secrets

__all__ = ["Store", "sqlite_url"]


def display_url(url: str) -> str:
    """``url`` with any password hidden (``user:***@``, ``?password=***``): safe for messages, logs and manifests."""
    try:
        return hide_url_secrets(make_url(url).render_as_string(hide_password=True))
    except (ArgumentError, ValueError):
        return f"<unparsable store URL {excerpt(hide_url_secrets(url))}>"


def unwritable(shown_url: str, reason: BaseException) -> PersistenceError:
    """A store that cannot be written (a full disk, a read-only file: the user's to fix), said in one line."""
    first_line = str(reason).splitlines()[0] if str(reason) else type(reason).__name__
    full = "; free some space or write elsewhere" if "disk is full" in first_line else ""  # SQLITE_FULL
    return PersistenceError(f"the store {shown_url} cannot be written: {excerpt(first_line, 160)}{full}")


def unreadable_url(url: str) -> PersistenceError:
    """SQLAlchemy parses a malformed host or port ('[::1:5432') with int(): a ValueError, said as what to fix."""
    return PersistenceError(f"cannot open the store {display_url(url)}: its host or port cannot be read "
                            "(an IPv6 address goes in brackets: postgresql://user@[::1]:5432/db)")


def read_only_url(url: str) -> str:
    """For an SQLite file, the ``mode=ro`` URI form of ``url`` (other URLs are returned unchanged)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise unreadable_url(url) from None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" or database.startswith("file:"):
        return url
    return f"{parsed.drivername}:///{read_only_uri(Path(database))}&uri=true"


class Store:
    def __init__(self, url: str, read_only: bool = False):
        self.url = url
        self.read_only = read_only
        try:
            self.engine = create_engine(url)
            if read_only and self.engine.dialect.name == "sqlite":  # a delta store reads with its base
                uri = "uri=true" in url
                event.listen(self.engine, "connect", lambda connection, _: segments.attach_base(connection, uri))
            if not read_only:
                if self.engine.dialect.name == "sqlite":  # a deleted row's text is overwritten, whatever the build
                    event.listen(self.engine, "connect", _secure_delete)
                Base.metadata.create_all(self.engine)
        except ImportError as exc:
            driver = exc.name or str(exc)
            raise PersistenceError(f"cannot open the store {display_url(url)}: its database driver {driver!r} "
                                   "is not installed (pip install it, or use an sqlite:/// URL)") from None
        except SQLAlchemyError as exc:
            raise PersistenceError(f"cannot open the store {display_url(url)}: {exc.__class__.__name__}") from None
        except ValueError:
            raise unreadable_url(url) from None

    @property
    def display_url(self) -> str:
        """The URL with any password hidden: safe for messages and logs."""
        return display_url(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def _failed(self, exc: SQLAlchemyError) -> PersistenceError:
        reason = getattr(exc, "orig", None) or exc
        first_line = str(reason).splitlines()[0] if str(reason) else type(reason).__name__
        return PersistenceError(f"the store {self.display_url} cannot be read: {excerpt(first_line, 160)}")

    def held_fingerprint(self) -> str | None:
        """The fingerprint the store records for the corpus it holds (None: none recorded)."""
        try:
            with Session(self.engine) as session:
                return session.scalar(select(StoreInfo.value).where(StoreInfo.key == "fingerprint"))
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None

    def fingerprint_and_texts(self) -> tuple[str | None, list[tuple[int, str]]]:
        """The recorded fingerprint and every chunk's ``(id, text)`` in id order, read in one snapshot (on
        PostgreSQL one REPEATABLE READ transaction: a load that reads while an update commits gets the old corpus
        or the new one): what a load that maps the snapshot's chunk columns takes from an external store
        (``core/saved_tree.py``), two columns of the chunks instead of every row made a ``Chunk`` and hashed."""
        try:
            with Session(self.engine) as session:
                self._one_snapshot(session)
                held = session.scalar(select(StoreInfo.value).where(StoreInfo.key == "fingerprint"))
                rows = session.execute(select(ChunkRow.id, ChunkRow.text).order_by(ChunkRow.id)).tuples().all()
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None
        return held, [(int(i), str(t)) for i, t in rows]

    def is_empty(self) -> bool:
        try:
            with Session(self.engine) as session:
                return session.scalar(select(func.count()).select_from(ChunkRow)) == 0
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None

    def write_corpus(self, documents: Sequence[SourceDocument], chunks: Iterable[Chunk], fingerprint: str) -> None:
        if not self.is_empty():
            raise PersistenceError(f"the store {self.display_url} already holds a corpus")
        with self._writing() as session:  # one transaction, bulk inserts
            session.execute(insert(DocumentRow), _document_rows(documents, 0))
            session.execute(insert(ChunkRow), _chunk_rows(chunks))
            session.add(StoreInfo(key="fingerprint", value=fingerprint))
            if self.engine.dialect.name == "sqlite":
                session.execute(text(DOCUMENT_METADATA_INDEX))
                session.execute(text(CHUNK_COLUMNS_INDEX))


    def apply_change(self, gone: Sequence[str], documents: Sequence[SourceDocument], chunks: Sequence[Chunk],
                     fingerprint: str, expected: str | None = None, above_ordinal: int | None = None) -> None:
        """The corpus changed in place, in one transaction: the documents ``gone`` (and their chunks) deleted,
        ``documents`` (with their ``chunks``) appended after every stored document, the fingerprint (and the
        retriever records' corpus) the new corpus's. Costs the change, not the corpus (docs/updating.md).

        ``expected``: the fingerprint the store must still hold (the corpus the change was planned on). Its row
        is read ``FOR UPDATE``, so on a database shared by several writers two commits serialise and the second
        finds the first's corpus: an error, nothing written, instead of a change applied to the wrong corpus.

        ``above_ordinal``: an ordinal the new documents must also come after (a delta's base's largest: the delta
        continues its base's order, ``store/segments.py``)."""
        with self._writing() as session:
            if expected is not None:
                held = session.scalar(select(StoreInfo.value).where(StoreInfo.key == "fingerprint").with_for_update())
                if held != expected:
                    raise PersistenceError(
                        f"the store {self.display_url} no longer holds the corpus this update was planned on "
                        f"({expected[:12]}; it holds {str(held)[:12]}): another writer changed it; load the tree "
                        "again and retry")
            if not self.has_metadata_column():  # a store written before metadata: its categories were all of it
                session.execute(text("ALTER TABLE documents ADD COLUMN metadata JSON"))
                session.execute(text("UPDATE documents SET metadata = categories"))
            with_fields = self.has_chunk_fields_column()
            if not with_fields and any(c.fields for c in chunks):  # a store older than chunk fields
                session.execute(text("ALTER TABLE chunks ADD COLUMN fields JSON"))
                with_fields = True
            for start in range(0, len(gone), _IN_LIST):
                batch = list(gone[start:start + _IN_LIST])
                session.execute(delete(ChunkRow).where(ChunkRow.document_id.in_(batch)))
                session.execute(delete(DocumentRow).where(DocumentRow.id.in_(batch)))
            stored = session.scalar(select(func.max(DocumentRow.ordinal)))
            after = max((x for x in (stored, above_ordinal) if x is not None), default=-1)
            if documents:
                session.execute(insert(DocumentRow), _document_rows(documents, after + 1))
            if chunks:
                session.execute(insert(ChunkRow), _chunk_rows(chunks, with_fields))
            session.execute(update(StoreInfo).where(StoreInfo.key == "fingerprint").values(value=fingerprint))
            session.execute(update(RetrieverRecord).values(corpus_fingerprint=fingerprint))

    @contextmanager
    def _writing(self) -> Iterator[Session]:
        """One transaction; a database error (a full disk, a read-only file: the user's to fix) becomes a
        PersistenceError naming the store, and nothing of the transaction stays."""
        try:
            with Session(self.engine) as session, session.begin():
                yield session
        except SQLAlchemyError as exc:
            raise unwritable(self.display_url, getattr(exc, "orig", None) or exc) from None

    def has_metadata_column(self) -> bool:
        """False for a store written before documents had metadata (its categories stand in for it)."""
        columns = inspect(self.engine).get_columns(DocumentRow.__tablename__)
        return any(column["name"] == "metadata" for column in columns)

    def has_chunk_fields_column(self) -> bool:
        """False for a store written before chunks had their own fields (page, section)."""
        return any(column["name"] == "fields" for column in inspect(self.engine).get_columns(ChunkRow.__tablename__))

    def _metadata_column(self) -> Any:
        return DocumentRow.metadata_ if self.has_metadata_column() else DocumentRow.categories

    def read_documents(self) -> list[SourceDocument]:
        return self._documents(select(DocumentRow.id, DocumentRow.title, DocumentRow.text, self._metadata_column(),
                                      DocumentRow.source).order_by(DocumentRow.ordinal))

    def documents_with_ids(self, ids: Sequence[str]) -> dict[str, SourceDocument]:
        """The stored documents among ``ids``, by id (an update reads what it names, not the corpus)."""
        found: list[SourceDocument] = []
        for start in range(0, len(ids), _IN_LIST):
            found += self._documents(select(DocumentRow.id, DocumentRow.title, DocumentRow.text,
                                            self._metadata_column(), DocumentRow.source)
                                     .where(DocumentRow.id.in_(list(ids[start:start + _IN_LIST]))))
        return {d.id: d for d in found}

    def _documents(self, query: Any) -> list[SourceDocument]:
        try:
            with Session(self.engine) as session:
                rows = session.execute(query).all()
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None
        return [SourceDocument(id=r[0], title=r[1], text=r[2], metadata=dict(r[3] or {}), source=r[4]) for r in rows]

    def document_page(self, offset: int, limit: int) -> tuple[int, list[SourceDocument]]:
        """How many documents the store holds, and ``limit`` of them from ``offset`` in corpus order, without
        their text (a listing: what the page's documents panel shows)."""
        try:
            with Session(self.engine) as session:
                total = int(session.scalar(select(func.count()).select_from(DocumentRow)) or 0)
                rows = session.execute(select(DocumentRow.id, DocumentRow.title, self._metadata_column())
                                       .order_by(DocumentRow.ordinal).offset(offset).limit(limit)).all()
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None
        return total, [SourceDocument(id=r[0], title=r[1] or "", text="", metadata=dict(r[2] or {})) for r in rows]

    def chunk_fields(self) -> list[tuple[str, dict[str, Any]]]:
        """``(document id, fields)`` of each chunk with its own fields (page, section), in id order."""
        if not self.has_chunk_fields_column():
            return []
        try:
            with Session(self.engine) as session:
                rows = session.execute(select(ChunkRow.document_id, ChunkRow.fields)
                                       .where(ChunkRow.fields.is_not(None)).order_by(ChunkRow.id)).all()
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None
        return [(r[0], dict(r[1])) for r in rows if r[1]]

    def read_chunk_set(self, scheme: int = ADDITIVE) -> ChunkSet:
        """The stored chunk set, fingerprinted under ``scheme`` (``documents/fingerprint.py``)."""
        try:
            with Session(self.engine) as session:
                self._one_snapshot(session)
                metadata = {d: dict(m or {})
                            for d, m in session.execute(select(DocumentRow.id, self._metadata_column()))}
                fields = ChunkRow.fields if self.has_chunk_fields_column() else null()
                rows = session.execute(select(ChunkRow.id, ChunkRow.document_id, ChunkRow.position, ChunkRow.text,
                                              ChunkRow.start, ChunkRow.end, fields).order_by(ChunkRow.id)).all()
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None
        except (AttributeError, TypeError, ValueError) as exc:  # rows of the wrong shape (a foreign database)
            raise PersistenceError(f"the store {self.display_url} holds malformed rows "
                                   f"({type(exc).__name__})") from None
        if not rows:
            raise PersistenceError(f"the store {self.display_url} holds no chunks")
        return ChunkSet((Chunk(id=r[0], document_id=r[1], position=r[2], text=r[3], start=r[4], end=r[5],
                               metadata=metadata.get(r[1], {}), fields=dict(r[6] or {})) for r in rows),
                        scheme=scheme)

    def _one_snapshot(self, session: Session) -> None:
        """On PostgreSQL, the reads of ``session`` see one snapshot (REPEATABLE READ; the default READ
        COMMITTED gives each statement its own): a load that reads while an update commits gets the old corpus
        or the new one, never the documents of one and the chunks of the other."""
        if self.engine.dialect.name == "postgresql":
            session.connection(execution_options={"isolation_level": "REPEATABLE READ"})

    def add_retriever_record(self, name: str, config: dict, folder: str, fingerprint: str) -> int:
        """Record a saved retriever; returns the record's id (what ``Retriever.set_id`` ties a tree to)."""
        with Session(self.engine) as session, session.begin():
            record = RetrieverRecord(name=name, config=config, folder=folder, corpus_fingerprint=fingerprint)
            session.add(record)
            session.flush()
            return int(record.id)

    def retriever_record(self, record_id: int) -> RetrieverRecord | None:
        with Session(self.engine) as session:
            return session.get(RetrieverRecord, record_id)

    def retriever_records(self) -> list[RetrieverRecord]:
        with Session(self.engine) as session:
            return list(session.scalars(select(RetrieverRecord).order_by(RetrieverRecord.id)).all())


#: Why: a load reads every document's id and metadata (sqlite_reader.DOCUMENT_METADATA), and a row of the
#: documents table holds the document's text before its metadata, so without this index that read goes
#: through every page of the texts (the whole corpus, which the chunks table holds again). With it, SQLite
#: answers from the index alone ("SCAN documents USING COVERING INDEX"): at 30,000 documents it cut the
#: load's store read from 0.45 s to 0.32 s on warm pages (docs/scale.md). SQLite only: PostgreSQL has no
#: btree operator class for JSON, and its loads read through the Store. A store written before it loads
#: as before.
DOCUMENT_METADATA_INDEX = "CREATE INDEX IF NOT EXISTS ix_documents_id_metadata ON documents (id, metadata)"
#: Why: the same for the chunks, since a load leaves their texts in the store (sqlite_reader.CHUNKS reads every
#: chunk's id, document, position and offsets): without it that read goes through every page of the chunks'
#: texts; with it, through the index's few bytes a row (docs/scale.md, "Texts left in the store"). SQLite only,
#: as above; a store written before it loads as before. The reader names it (``INDEXED BY``): SQLite's planner
#: estimates a row's size from the declared types (``text TEXT`` counts as a few bytes), so it scans the table.
CHUNK_COLUMNS_INDEX = 'CREATE INDEX IF NOT EXISTS ix_chunks_columns ON chunks (id, document_id, position, start, "end")'
_IN_LIST = 500  # ids per DELETE ... IN (...): under SQLite's bound-parameter limit


def _document_rows(documents: Sequence[SourceDocument], first_ordinal: int) -> list[dict[str, Any]]:
    return [{"id": d.id, "ordinal": first_ordinal + i, "title": d.title, "text": d.text,
             "categories": {k: list(v) for k, v in normalise_categories(d.metadata).items()},
             "metadata_": dict(d.metadata), "source": d.source}
            for i, d in enumerate(documents)]


def _chunk_rows(chunks: Iterable[Chunk], with_fields: bool = True) -> list[dict[str, Any]]:
    """The chunks' rows; ``with_fields``: the store has the ``fields`` column (null for a chunk without any;
    a store older than chunk fields takes the rows of a corpus without structure as they are)."""
    return [{"id": c.id, "document_id": c.document_id, "position": c.position, "text": c.text,
             "start": c.start, "end": c.end, **({"fields": dict(c.fields) or None} if with_fields else {})}
            for c in chunks]


def write_temporary_store(folder: Path, documents: Sequence[SourceDocument], chunks: Iterable[Chunk],
                          fingerprint: str) -> Path:
    """A new SQLite store of this corpus in a temporary file of ``folder``, removed again if writing fails;
    the caller renames or copies it in."""
    with _temporary_store_file(folder) as tmp:
        _write(tmp, lambda store: store.write_corpus(documents, chunks, fingerprint))
    return tmp


def write_store_file(target: Path, documents: Sequence[SourceDocument], chunks: Iterable[Chunk],
                     fingerprint: str) -> str:
    """A new SQLite store file ``target`` holding this corpus, written beside it under a temporary name and
    renamed in, so ``target`` is whole or absent; returns its URL. An existing ``target`` is the same corpus
    (its name is the fingerprint's) and kept."""
    if not target.exists():
        os.replace(write_temporary_store(target.parent, documents, chunks, fingerprint), target)
    return sqlite_url(target)


def write_changed_store_file(source: Path, target: Path, gone: Sequence[str], documents: Sequence[SourceDocument],
                             chunks: Sequence[Chunk], fingerprint: str, purge: bool = False) -> str:
    """The store file ``source`` with one change applied (:meth:`Store.apply_change`), as the new file
    ``target``, written under a temporary name and renamed in, so ``target`` is whole or absent and ``source``
    (the old tree's store, which its readers keep reading) is never touched. Returns ``target``'s URL; an
    existing ``target`` is kept (its name is its corpus's fingerprint).

    ``target`` is a *delta* over ``source``'s base (``store/segments.py``: the documents added since the base, and
    the base's documents it hides, removed or replaced since; no byte of the base copied) when both lie in one
    folder and the delta is still small; otherwise, or when asked to ``purge``, a whole file: a byte copy of the
    base with the delta and the change applied (no row is rewritten through Python), which holds no text of a
    removed document (docs/updating.md, "Removed text")."""
    if not target.exists():
        with _temporary_store_file(target.parent) as tmp:
            base = None if purge else _delta_base(source, target)
            if base is None:
                materialize(source, tmp)
                _write(tmp, lambda store: store.apply_change(gone, documents, chunks, fingerprint))
            else:
                _write_delta(source, base, tmp, gone, documents, chunks, fingerprint)
            os.replace(tmp, target)
    return sqlite_url(target)


def _delta_base(source: Path, target: Path) -> Path | None:
    """The base the change's delta goes over, or None when a whole file is to be written: the folders differ, the
    base predates a column the views read, or the delta has grown past its bound (``segments.needs_compaction``:
    its own rows and the text it hides in its base)."""
    if source.resolve().parent != target.resolve().parent:
        return None
    connection = sqlite3.connect(read_only_uri(source), uri=True)
    try:
        entry = segments.base_entry(connection)
        if entry is None:
            return source if segments.has_current_columns(connection) else None
        segments.attach_base(connection, uri=True)
        base = source.parent / entry
        return None if segments.needs_compaction(connection, source, base) else base
    except sqlite3.Error as exc:
        raise PersistenceError(f"cannot read the store {source}: {exc}") from None
    finally:
        connection.close()


def _ids_among(connection: sqlite3.Connection, schema: str, ids: Sequence[str]) -> set[str]:
    """The documents among ``ids`` that the store open as ``schema`` holds (its own rows, not a base's)."""
    found: set[str] = set()
    listed = list(ids)
    for start in range(0, len(listed), _IN_LIST):
        batch = listed[start:start + _IN_LIST]
        found.update(r[0] for r in connection.execute(
            f"SELECT id FROM {schema}.documents WHERE id IN ({', '.join('?' * len(batch))})", batch))
    return found


def _write_delta(source: Path, base: Path, tmp: Path, gone: Sequence[str], documents: Sequence[SourceDocument],
                 chunks: Sequence[Chunk], fingerprint: str) -> None:
    """The change as the delta ``tmp`` over ``base``: ``source``'s delta copied (when it is one: it is small), or
    a new one holding the base's records; the base's documents among ``gone`` hidden (:func:`_hide_in_delta`); then
    the change in one transaction (:meth:`Store.apply_change`: the gone documents, the delta's own, deleted; the new
    ones appended after every ordinal, the base's included; the fingerprint and the records the new corpus's)."""
    with sqlite3.connect(read_only_uri(base), uri=True) as reading:
        last = reading.execute("SELECT max(ordinal) FROM documents").fetchone()[0]
        in_base = _ids_among(reading, "main", gone)
        clash = _ids_among(reading, "main", [d.id for d in documents]) - set(gone)
        _check_above_base(reading, base, chunks)
    reading.close()
    if source != base:
        shutil.copyfile(source, tmp)
    else:
        _new_delta(base, tmp)
    _hide_in_delta(tmp, base, sorted(in_base), clash)
    _write(tmp, lambda store: store.apply_change(gone, documents, chunks, fingerprint, above_ordinal=last))


def _new_delta(base: Path, tmp: Path) -> None:
    """An empty delta over ``base`` in ``tmp``: the base's tables and indexes (their SQL, as the base has it), the
    segment table naming it, the base's retriever records and fingerprint, in one transaction. Not flushed: the
    change's transaction, the last, is (SQLite's commit syncs the whole file before the caller renames it in)."""
    connection = sqlite3.connect(tmp, isolation_level=None)
    try:
        connection.execute("PRAGMA synchronous = OFF")
        connection.execute("ATTACH DATABASE ? AS base", (str(base),))  # read, never written
        connection.execute("BEGIN")
        schema = connection.execute("SELECT sql FROM base.sqlite_master WHERE sql IS NOT NULL "
                                    "AND name NOT LIKE 'sqlite_%' ORDER BY type DESC").fetchall()  # tables first
        for (statement,) in schema:
            connection.execute(statement)
        connection.execute(segments.SEGMENT_TABLE)
        connection.execute(f"INSERT INTO {segments.SEGMENT_BASE_TABLE} VALUES (?)", (base.name,))
        connection.execute("INSERT INTO main.retrievers SELECT * FROM base.retrievers")
        connection.execute("INSERT INTO main.store_info SELECT * FROM base.store_info")
        connection.execute("COMMIT")
    except sqlite3.Error as exc:
        raise unwritable(display_url(sqlite_url(tmp)), exc) from None
    finally:
        connection.close()


def _check_above_base(base: sqlite3.Connection, path: Path, chunks: Sequence[Chunk]) -> None:
    """What the base's keys would refuse in a whole file, refused for a delta too: a new chunk's id not above every
    base chunk's (the load reads the base's rows then the delta's, in id order)."""
    top = base.execute("SELECT max(id) FROM chunks").fetchone()[0]
    low = min((c.id for c in chunks), default=None)
    if low is not None and top is not None and low <= top:
        raise PersistenceError(f"the store {display_url(sqlite_url(path))} cannot be written: the chunk id {low} "
                               f"is not above the base's {top}")


def _hide_in_delta(delta: Path, base: Path, gone: Sequence[str], held: set[str]) -> None:
    """Hide the base's documents ``gone`` in the delta ``delta`` being written (``segments.hide``), in one
    transaction, not flushed (as :func:`_new_delta`'s: the change's transaction, the last, is). First, a new
    document whose id the base holds (``held``) is refused unless the delta hides the base's (removed or replaced
    since): the base's key would refuse it in a whole file."""
    connection = sqlite3.connect(delta, isolation_level=None)
    try:
        clash = sorted(held - segments.hidden_among(connection, sorted(held)))
        if clash:
            raise PersistenceError(f"the store {display_url(sqlite_url(base))} cannot be written: the document "
                                   f"{excerpt(clash[0])} is there already")
        if gone:
            connection.execute("PRAGMA synchronous = OFF")
            connection.execute("BEGIN")
            segments.hide(connection, gone)
            connection.execute("COMMIT")
    except sqlite3.Error as exc:
        raise unwritable(display_url(sqlite_url(delta)), exc) from None
    finally:
        connection.close()


def materialize(source: Path, target: Path) -> None:
    """``source`` as one whole store file ``target`` (an empty file, the caller's temporary one): a byte copy of it,
    or for a delta of its base with the delta applied in one transaction (the rows it hides deleted, their bytes
    overwritten; its rows appended, its fingerprint and records taken)."""
    base = segments.base_of(source)
    shutil.copyfile(source if base is None else base, target)
    if base is None:
        return
    connection = sqlite3.connect(target)
    try:
        connection.execute("PRAGMA secure_delete = ON")  # a hidden document's text is overwritten, not freed
        connection.execute("ATTACH DATABASE ? AS delta", (str(source),))  # read, never written
        with connection:
            if segments.hides_documents(connection, "delta"):
                for table, key in (("chunks", "document_id"), ("documents", "id")):
                    connection.execute(f"DELETE FROM main.{table} WHERE {key} IN "
                                       f"(SELECT id FROM delta.{segments.REMOVED_TABLE})")
            for table, columns in (("documents", segments.DOCUMENT_COLUMNS), ("chunks", segments.CHUNK_COLUMNS)):
                listed = ", ".join(columns)
                connection.execute(f"INSERT INTO main.{table} ({listed}) SELECT {listed} FROM delta.{table}")
            for table in ("store_info", "retrievers"):
                connection.execute(f"DELETE FROM main.{table}")
                connection.execute(f"INSERT INTO main.{table} SELECT * FROM delta.{table}")
    except sqlite3.Error as exc:
        raise unwritable(display_url(sqlite_url(target)), exc) from None
    finally:
        connection.close()


def _secure_delete(connection: sqlite3.Connection, _record: Any) -> None:
    connection.execute("PRAGMA secure_delete = ON")


def _write(path: Path, write: Callable[[Store], None]) -> None:
    store = Store(sqlite_url(path))
    try:
        write(store)
    finally:
        store.close()


@contextmanager
def _temporary_store_file(folder: Path) -> Iterator[Path]:
    """A new empty temporary file in ``folder`` for a store being written; it and its journals are removed
    if the writing fails or is interrupted."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".store-", suffix=".sqlite.tmp")
    os.close(fd)
    try:
        yield Path(tmp)
    except BaseException:
        for leftover in (tmp, f"{tmp}-journal", f"{tmp}-wal", f"{tmp}-shm"):
            Path(leftover).unlink(missing_ok=True)
        raise
