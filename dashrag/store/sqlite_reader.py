"""Reading a corpus's chunk set from an SQLite store with the standard library's ``sqlite3``.

Loading a saved tree reads every chunk of its store once and writes nothing. For that,
importing SQLAlchemy (its ORM, the models) cost a cold ``dashrag query`` more than
everything else it did (bench/bench_cold_query.py), so :func:`read_chunk_set` reads an
``sqlite:///`` store read-only through ``sqlite3`` with the same two SELECTs
:meth:`dashrag.store.store.Store.read_chunk_set` runs, and hands every other URL to
the Store. The table and column names are those of ``store/models.py`` (a test checks
they agree, and that both readers give the same chunk set).

The chunks' texts are not read at load: the chunk set keeps the file open
(:class:`SqliteChunkTexts`) and reads the texts of the chunks it shows, in one query per
batch (docs/scale.md, "Texts left in the store").
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence
from urllib.parse import quote

from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.fingerprint import ADDITIVE
from dashrag.errors import PersistenceError
from dashrag.store import segments

SQLITE_PREFIX = "sqlite:///"
DOCUMENT_CATEGORIES = "SELECT id, categories FROM documents"  # a store written before metadata existed
DOCUMENT_METADATA = "SELECT id, metadata FROM documents"
DOCUMENT_COLUMNS = "SELECT name FROM pragma_table_info('documents')"
CHUNKS = 'SELECT id, document_id, position, start, "end" FROM chunks ORDER BY id'  # the texts: below, when shown
CHUNK_COLUMNS_INDEX = "ix_chunks_columns"  # store.CHUNK_COLUMNS_INDEX: named, as SQLite estimates it no smaller
CHUNKS_FROM_INDEX = CHUNKS.replace("FROM chunks", f"FROM chunks INDEXED BY {CHUNK_COLUMNS_INDEX}")
INDEXES = "SELECT name FROM sqlite_master WHERE type = 'index'"
CHUNK_TEXTS = "SELECT id, text FROM chunks WHERE id IN (SELECT value FROM json_each(?))"  # one query per batch
CHUNK_TEXTS_AFTER = "SELECT id, text FROM chunks WHERE id > ? ORDER BY id LIMIT ?"  # every text, a page at a time
TEXT_PAGE = 2000
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


class SqliteChunkTexts:
    """The texts of an SQLite store's chunks, read when they are shown (``documents/chunk_set.ChunkTexts``).

    The file is opened read-only when the tree is loaded and held open for the tree's life, as its postings
    are mapped: a later save that replaces or removes the file (a new store for an update) leaves this open
    file as it was, so the loaded tree keeps answering from the corpus it was loaded with. One connection per
    tree, shared by the threads that query it (SQLite in serialised mode; a lock keeps each statement whole).
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self._connection = sqlite3.connect(read_only_uri(path), uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise PersistenceError(f"cannot open the store {path}: {exc}") from None
        try:  # a delta store (``store/segments.py``): its base attached, the two read as one through views
            self.segmented = segments.attach_base(self._connection, uri=True)
            #: what a read of the base's own chunks table adds: the rows of the documents the delta hides left out
            self.base_chunks_kept = segments.base_rows_kept(self._connection, "chunks") if self.segmented else ""
        except sqlite3.Error as exc:  # the first read of the file (its schema): a file that is no store fails here
            self._connection.close()
            raise PersistenceError(f"cannot read the store {path}: {exc}") from None
        except BaseException:
            self._connection.close()
            raise
        self._lock = threading.Lock()

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """The rows of one statement, read whole under the lock."""
        try:
            with self._lock:
                return self._connection.execute(sql, parameters).fetchall()
        except (sqlite3.Error, ValueError) as exc:
            raise PersistenceError(f"cannot read the store {self.path}: {exc.__class__.__name__}: {exc}") from None

    def texts_of(self, ids: Sequence[int]) -> Mapping[int, str]:
        return dict(self.execute(CHUNK_TEXTS, (json.dumps([int(i) for i in ids]),)))

    def all_texts(self) -> Iterator[tuple[int, str]]:
        after = -(2**63)
        while True:
            page = self.execute(CHUNK_TEXTS_AFTER, (after, TEXT_PAGE))
            yield from page
            if len(page) < TEXT_PAGE:
                return
            after = page[-1][0]

    def close(self) -> None:
        self._connection.close()


def read_sqlite_chunk_set(path: Path, fingerprint: str | None = None, scheme: int = ADDITIVE) -> ChunkSet:
    """The chunk set stored in the SQLite file ``path``, opened read-only, without the chunks' texts (read when
    shown: :class:`SqliteChunkTexts`); ``fingerprint``: its known fingerprint (the file is unchanged since a save
    computed it), taken instead of re-hashing; ``scheme``: the fingerprint's (``documents/fingerprint.py``: the
    saved folder's format version says which)."""
    texts = SqliteChunkTexts(path)
    try:
        columns = {name for (name,) in texts.execute(DOCUMENT_COLUMNS)}
        select = DOCUMENT_METADATA if "metadata" in columns else DOCUMENT_CATEGORIES
        metadata = {d: _json_object(m) for d, m in texts.execute(select)}
        rows = _chunk_rows(texts)
        with_fields = any(name == "fields" for (name,) in texts.execute(CHUNK_COLUMNS))
        fields = {i: _json_object(f) for i, f in texts.execute(CHUNK_FIELDS)} if with_fields else {}
        if not rows:
            raise PersistenceError(f"the store {path} holds no chunks")
        ids, document_ids, positions, starts, ends = zip(*rows)
    except (ValueError, AttributeError, TypeError) as exc:
        texts.close()
        raise PersistenceError(f"cannot read the store {path}: {exc.__class__.__name__}: {exc}") from None
    except BaseException:
        texts.close()
        raise
    del rows
    return ChunkSet.from_columns(ids, document_ids, positions, starts, ends, metadata, texts, fingerprint,
                                 {i: f for i, f in fields.items() if f}, scheme)


def _chunk_rows(texts: SqliteChunkTexts) -> list[Any]:
    """Every chunk's (id, document, position, start, end), in id order. A delta store's are its base's then its own
    (ids above every base id: ``store/segments.py``), each table read by its covering index where it has one (a view
    cannot name an index)."""
    own = texts.execute(_chunks_of(texts, "main"))
    if not texts.segmented:
        return own
    return texts.execute(_chunks_of(texts, segments.BASE_SCHEMA, texts.base_chunks_kept)) + own


def _chunks_of(texts: SqliteChunkTexts, schema: str, where: str = "") -> str:
    """The statement reading the chunk columns of the ``schema`` database's own table (by its index if it has it),
    the rows ``where`` keeps."""
    indexed = any(name == CHUNK_COLUMNS_INDEX
                  for (name,) in texts.execute(INDEXES.replace("sqlite_master", f"{schema}.sqlite_master")))
    statement = (CHUNKS_FROM_INDEX if indexed else CHUNKS).replace("FROM chunks", f"FROM {schema}.chunks")
    return statement.replace(" ORDER BY", f"{where} ORDER BY")


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
