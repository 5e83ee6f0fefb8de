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

Only additions go to a delta. A change that removes or replaces a document of the base writes a whole file, as
before: a removed document's text must leave the folder once the update is published (docs/updating.md, "No text
left behind"), and a base is never changed in place. A delta's own documents are removed from the new delta.

A delta's chunks have ids above every base chunk (an update numbers new chunks from the largest id on; the writer
checks it), so the base's rows then the delta's rows are in id order, which the load relies on.
"""

from __future__ import annotations

import sqlite3
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


def _view(table: str, columns: tuple[str, ...]) -> str:
    listed = ", ".join(columns)
    return (f"CREATE TEMP VIEW IF NOT EXISTS {table} AS SELECT {listed} FROM {BASE_SCHEMA}.{table} "
            f"UNION ALL SELECT {listed} FROM main.{table}")


VIEWS = (_view("documents", DOCUMENT_COLUMNS), _view("chunks", CHUNK_COLUMNS))


def base_entry(connection: sqlite3.Connection, schema: str = "main") -> str | None:
    """The base's file name when the store open as ``schema`` is a delta (None for a whole store)."""
    found = connection.execute(f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?",
                               (SEGMENT_BASE_TABLE,)).fetchone()
    if found is None:
        return None
    row = connection.execute(f"SELECT name FROM {schema}.{SEGMENT_BASE_TABLE}").fetchone()
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
    for view in VIEWS:
        connection.execute(view)
    return True


def needs_compaction(delta: Path, base: Path) -> bool:
    """Whether the next update should write a whole store instead of a delta (see :data:`COMPACT_FRACTION`)."""
    return delta.stat().st_size * COMPACT_FRACTION > base.stat().st_size


def has_current_columns(connection: sqlite3.Connection, schema: str = "main") -> bool:
    """Whether the store open as ``schema`` has every column the views read (a store written before documents
    had metadata, or chunks fields, takes an update as a whole copy, as before)."""
    documents = {r[1] for r in connection.execute(f"PRAGMA {schema}.table_info(documents)")}
    chunks = {r[1] for r in connection.execute(f"PRAGMA {schema}.table_info(chunks)")}
    return {"metadata"} <= documents and {"fields"} <= chunks
