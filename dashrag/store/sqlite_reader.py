"""Reading a corpus's chunk set from an SQLite store with the standard library's ``sqlite3``.

Loading a saved tree reads every chunk of its store once and writes nothing. For that,
importing SQLAlchemy (its ORM, the models) cost a cold ``dashrag query`` more than
everything else it did (bench/bench_cold_query.py), so :func:`read_chunk_set` reads an
``sqlite:///`` store read-only through ``sqlite3`` with the same two SELECTs
:meth:`dashrag.store.store.Store.read_chunk_set` runs, and hands every other URL to
the Store. The table and column names are those of ``store/models.py`` (a test checks
they agree, and that both readers give the same chunk set).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.fingerprint import ADDITIVE
from dashrag.errors import PersistenceError

SQLITE_PREFIX = "sqlite:///"
DOCUMENT_CATEGORIES = "SELECT id, categories FROM documents"  # a store written before metadata existed
DOCUMENT_METADATA = "SELECT id, metadata FROM documents"
DOCUMENT_COLUMNS = "SELECT name FROM pragma_table_info('documents')"
CHUNKS = 'SELECT id, document_id, position, text, start, "end" FROM chunks ORDER BY id'
CHUNK_COLUMNS = "SELECT name FROM pragma_table_info('chunks')"
CHUNK_FIELDS = "SELECT id, fields FROM chunks WHERE fields IS NOT NULL"  # few chunks have any: read apart


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of the SQLite file ``path`` (absolute, so the URL works from anywhere)."""
    return f"{SQLITE_PREFIX}{Path(path).resolve()}"


def sqlite_path(url: str) -> Path | None:
    """The file of a plain ``sqlite:///PATH`` URL; None for any other URL (options, memory, other databases)."""
    if not url.startswith(SQLITE_PREFIX) or "?" in url or len(url) == len(SQLITE_PREFIX):
        return None
    return Path(url[len(SQLITE_PREFIX):])


def read_only_uri(path: Path) -> str:
    """The ``file:`` URI that opens ``path`` without writing anything. ``mode=ro`` alone is not enough:
    a store in WAL journal mode gets ``-wal`` and ``-shm`` files from any reader. Without a ``-wal`` file
    beside it everything is in the file itself, so it is opened ``immutable`` (no journal, no locks);
    with one (another process writes it now), ``mode=ro`` reads the journal too."""
    path = Path(path).resolve()
    flags = "mode=ro" if Path(f"{path}-wal").exists() else "mode=ro&immutable=1"
    return f"file:{quote(str(path))}?{flags}"


def _json_object(raw: str | None) -> dict[str, Any]:
    if raw is None or raw == "{}":  # most documents: no JSON parse (a cold load reads every document's row)
        return {}
    return dict(json.loads(raw) or {})


def read_sqlite_chunk_set(path: Path, fingerprint: str | None = None, scheme: int = ADDITIVE) -> ChunkSet:
    """The chunk set stored in the SQLite file ``path``, opened read-only; ``fingerprint``: its known
    fingerprint (the file is unchanged since a save computed it), taken instead of re-hashing; ``scheme``: the
    fingerprint's (``documents/fingerprint.py``: the saved folder's format version says which)."""
    try:
        connection = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise PersistenceError(f"cannot open the store {path}: {exc}") from None
    try:
        columns = {name for (name,) in connection.execute(DOCUMENT_COLUMNS)}
        select = DOCUMENT_METADATA if "metadata" in columns else DOCUMENT_CATEGORIES
        metadata = {d: _json_object(m) for d, m in connection.execute(select)}
        rows = connection.execute(CHUNKS).fetchall()
        with_fields = any(name == "fields" for (name,) in connection.execute(CHUNK_COLUMNS))
        fields = {i: _json_object(f) for i, f in connection.execute(CHUNK_FIELDS)} if with_fields else {}
    except (sqlite3.Error, ValueError, AttributeError, TypeError) as exc:
        raise PersistenceError(f"cannot read the store {path}: {exc.__class__.__name__}: {exc}") from None
    finally:
        connection.close()
    if not rows:
        raise PersistenceError(f"the store {path} holds no chunks")
    return ChunkSet.from_rows(rows, metadata, fingerprint, {i: f for i, f in fields.items() if f}, scheme)


def read_chunk_set(url: str, fingerprint: str | None = None, scheme: int = ADDITIVE) -> ChunkSet:
    """The chunk set of the store at ``url``: through ``sqlite3`` for an SQLite file, else through the Store
    (``fingerprint``: see :func:`read_sqlite_chunk_set`; only an SQLite file's is taken)."""
    path = sqlite_path(url)
    if path is not None:
        return read_sqlite_chunk_set(path, fingerprint, scheme)
    from dashrag.store.store import Store, read_only_url

    store = Store(read_only_url(url), read_only=True)
    try:
        return store.read_chunk_set(scheme)
    finally:
        store.close()
