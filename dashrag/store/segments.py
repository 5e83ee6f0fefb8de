"""An SQLite store as a base file plus one delta file: how an update that adds documents avoids copying the corpus.

A store file whose ``segment_base`` table names another file of its folder is a *delta*: it holds the documents
and chunks added since that base was written, and the whole corpus's fingerprint and retriever records. The base
is an ordinary store file, never changed (every store file is immutable once renamed in). A reader that opens a
delta attaches its base and sees one corpus through two temporary views named ``documents`` and ``chunks``
(SQLite resolves an unqualified name in the ``temp`` schema first), so every reader of a store, through
``sqlite3`` or SQLAlchemy, reads a delta as it reads a whole file: the base's rows, then the delta's.

Why: an update used to copy the old store file's bytes and change the copy, linear in the corpus (a store of
several GB at a million documents, written and flushed again for ten documents). A delta costs what was added
since the base (docs/scale.md, "Where an update's time goes"). When it has grown past a fraction of the base
(:func:`needs_compaction`), the next update writes a whole file again, which becomes the next base.

A change that removes or replaces a document of the base goes to a delta too: the delta *hides* it (its id in the
delta's ``segment_removed`` table; the views and the readers leave out the base's rows of a hidden document), since
a base is never changed in place and copying it (~2.6 GB at a million documents) was most of a removal's cost. The
hidden document's text stays in the base until the next whole file: the delta's bound counts it
(:func:`needs_compaction`), and an update asked to purge writes a whole file at once (docs/updating.md, "Removed
text"). A delta's own documents are removed from the new delta. A delta that hides documents names its base in a
column an older dashrag does not read (:data:`HIDING_BASE_COLUMN`), so an older dashrag refuses the store with an
error instead of reading the hidden documents back.

A delta's chunks have ids above every base chunk (an update numbers new chunks from the largest id on; the writer
checks it), so the base's rows then the delta's rows are in id order, which the load relies on.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from dashrag.errors import PersistenceError

SEGMENT_BASE_TABLE = "segment_base"
BASE_SCHEMA = "segment_base_file"  # the name the base is attached under
DOCUMENT_COLUMNS = ("id", "ordinal", "title", "text", "categories", "metadata", "source")
CHUNK_COLUMNS = ("id", "document_id", "position", "text", "start", '"end"', "fields")
#: a delta is copied whole by each update; past 1/COMPACT_FRACTION of its base's bytes, the next update writes one
#: whole file instead (a copy of the base with the delta and the change applied), which becomes the next base. Why 64:
#: with a base of B bytes and updates adding a bytes each, an update copies B/(2F) bytes of delta on average and a
#: compaction (B bytes) comes every B/(F a) updates, so each costs about B/(2F) + F a: at 1M documents (B ~2.5 GB)
#: and 10 documents an update (a ~10 KB), F = 8 copies ~160 MB an update on average, F = 64 ~20 MB, with one
#: compaction in ~4,000 such updates (the optimum, F ~350, would compact every ~700)
COMPACT_FRACTION = 64
SEGMENT_TABLE = f"CREATE TABLE {SEGMENT_BASE_TABLE} (name TEXT NOT NULL)"
REMOVED_TABLE = "segment_removed"  # the base's documents a delta hides (removed or replaced since the base)
HIDING_BASE_COLUMN = "base_hiding_documents"  # segment_base's column once the delta hides any: see the docstring
_DOCUMENT_KEY = {"documents": "id", "chunks": "document_id"}  # the column naming a row's document, per table


def hides_documents(connection: sqlite3.Connection, schema: str = "main") -> bool:
    """Whether the store open as ``schema`` is a delta that hides documents of its base."""
    return connection.execute(f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?",
                              (REMOVED_TABLE,)).fetchone() is not None


def base_rows_kept(connection: sqlite3.Connection, table: str) -> str:
    """The ``WHERE`` clause keeping the base's rows of ``table`` that the delta open as ``main`` does not hide
    (empty for a delta that hides none): what every reader of the base's own tables adds."""
    if not hides_documents(connection):
        return ""
    return f" WHERE {_DOCUMENT_KEY[table]} NOT IN (SELECT id FROM main.{REMOVED_TABLE})"


def _view(connection: sqlite3.Connection, table: str, columns: tuple[str, ...]) -> str:
    listed = ", ".join(columns)
    return (f"CREATE TEMP VIEW IF NOT EXISTS {table} AS SELECT {listed} FROM {BASE_SCHEMA}.{table}"
            f"{base_rows_kept(connection, table)} UNION ALL SELECT {listed} FROM main.{table}")


def base_entry(connection: sqlite3.Connection, schema: str = "main") -> str | None:
    """The base's file name when the store open as ``schema`` is a delta (None for a whole store)."""
    found = connection.execute(f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?",
                               (SEGMENT_BASE_TABLE,)).fetchone()
    if found is None:
        return None
    row = connection.execute(f"SELECT * FROM {schema}.{SEGMENT_BASE_TABLE}").fetchone()  # either column
    if row is None or not isinstance(row[0], str) or Path(row[0]).name != row[0] or row[0] in ("", ".", ".."):
        raise PersistenceError("a delta store names no base file of its own folder")
    return str(row[0])


def base_of(path: Path) -> Path | None:
    """The base file of the store file ``path`` when it is a delta (None for a whole store)."""
    from dashrag.store.sqlite_reader import read_only_uri

    try:
        connection = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise PersistenceError(f"cannot open the store {path}: {exc}") from None
    try:
        entry = base_entry(connection)
    except sqlite3.Error as exc:
        raise PersistenceError(f"cannot read the store {path}: {exc}") from None
    finally:
        connection.close()
    return None if entry is None else Path(path).parent / entry


def attach_base(connection: sqlite3.Connection, uri: bool) -> bool:
    """When the store open on ``connection`` is a delta: attach its base (read-only; ``uri``: the connection
    takes ``file:`` URIs, so the base is opened ``immutable`` as the loads open a store) and make the views that
    show both as one corpus. Returns whether it was a delta."""
    from dashrag.store.sqlite_reader import read_only_uri

    entry = base_entry(connection)
    if entry is None:
        return False
    main_file = next(row[2] for row in connection.execute("PRAGMA database_list") if row[1] == "main")
    base = Path(main_file).parent / entry
    if not base.is_file():
        raise PersistenceError(f"{base}: the base file of the delta store {main_file} is missing")
    connection.execute("ATTACH DATABASE ? AS " + BASE_SCHEMA, (read_only_uri(base) if uri else str(base),))
    for table, columns in (("documents", DOCUMENT_COLUMNS), ("chunks", CHUNK_COLUMNS)):
        connection.execute(_view(connection, table, columns))
    return True


def hide(connection: sqlite3.Connection, ids: Sequence[str]) -> None:
    """Hide the base's documents ``ids`` (and their chunks) in the delta open as ``main`` (a file being written,
    not yet renamed in), in the caller's transaction."""
    if not hides_documents(connection):
        connection.execute(f"ALTER TABLE {SEGMENT_BASE_TABLE} RENAME COLUMN name TO {HIDING_BASE_COLUMN}")
        connection.execute(f"CREATE TABLE {REMOVED_TABLE} (id TEXT PRIMARY KEY NOT NULL)")
    connection.executemany(f"INSERT OR IGNORE INTO {REMOVED_TABLE} VALUES (?)", [(i,) for i in ids])


def hidden_among(connection: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
    """The documents among ``ids`` that the delta open as ``main`` hides in its base."""
    if not hides_documents(connection) or not ids:
        return set()
    listed = json.dumps(list(ids))
    return {r[0] for r in connection.execute(
        f"SELECT id FROM {REMOVED_TABLE} WHERE id IN (SELECT value FROM json_each(?))", (listed,))}


def hidden_text_bytes(connection: sqlite3.Connection) -> int:
    """The bytes of text the base (attached) still holds for the documents the delta open as ``main`` hides: their
    documents' and chunks' texts, found by their keys (O(hidden documents))."""
    if not hides_documents(connection):
        return 0
    total = 0
    for table, key in _DOCUMENT_KEY.items():
        total += connection.execute(
            f"SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM {BASE_SCHEMA}.{table} "
            f"WHERE {key} IN (SELECT id FROM main.{REMOVED_TABLE})").fetchone()[0]
    return int(total)


def needs_compaction(connection: sqlite3.Connection, delta: Path, base: Path) -> bool:
    """Whether the next update should write a whole store instead of a delta (see :data:`COMPACT_FRACTION`): the
    delta's bytes and the text it hides in its base (``connection``: the delta open with its base attached)
    against the base's bytes. So a hidden document's text leaves the folder within a bounded number of updates:
    at a million documents, after about 15,000 removed."""
    return (delta.stat().st_size + hidden_text_bytes(connection)) * COMPACT_FRACTION > base.stat().st_size


def has_current_columns(connection: sqlite3.Connection, schema: str = "main") -> bool:
    """Whether the store open as ``schema`` has every column the views read (a store written before documents
    had metadata, or chunks fields, takes an update as a whole copy, as before)."""
    documents = {r[1] for r in connection.execute(f"PRAGMA {schema}.table_info(documents)")}
    chunks = {r[1] for r in connection.execute(f"PRAGMA {schema}.table_info(chunks)")}
    return {"metadata"} <= documents and {"fields"} <= chunks
