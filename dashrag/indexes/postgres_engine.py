"""What the PostgreSQL indexes (pgvector vectors, BM25 term weights) share: connection, records, filters, errors.

* **Where**: ``url`` is a SQLAlchemy URL (``postgresql+psycopg://user@127.0.0.1:5432/db``)
  *without* a password; the password, if the server wants one, is a credential
  reference (``password``: an environment variable), read when connecting, never saved.
  ``dashrag pg start`` runs a local server with pgvector for people who have none.
* **What**: one table per distinct node, one row per chunk: ``chunk_id`` (primary key),
  ``source_id``, ``text``, ``categories``, ``metadata`` and ``filterable`` (jsonb: the
  metadata typed for filters, ``dashrag/filters/payload.py``, with a GIN index) and what
  the index searches. What it
  holds is a row of ``dashrag_indexes``; a statement-level trigger on each of its tables
  counts every later INSERT, UPDATE, DELETE or TRUNCATE there, so a table edited behind
  the tree's back is refused on load.
* **Filters**: the restriction is the SQL ``WHERE`` of the search statement itself; a metadata
  filter is compiled to SQL/JSON path tests on ``filterable`` (``dashrag/filters/sql.py``).
  A table built before metadata filters (no ``filterable`` column) gets the exact list of the
  chunk ids the filter allows instead.
"""

from __future__ import annotations

import json
from typing import Any, Generic, Iterable, Iterator, TypeVar

import numpy as np
from pydantic import Field, field_validator

from dashrag.core.params import ComponentSpec, ParamKind, component_field, kind_field
from dashrag.errors import EngineError
from dashrag.filters.sql import compile_where, to_sql
from dashrag.indexes.engine import EngineFilter, EngineIndex, EngineParams, payloads_of

PAYLOAD_BATCH = 2000  # chunks whose texts one read of the store gives (a COPY streams them)

RECORDS_TABLE = "dashrag_indexes"
CHUNK_COLUMNS = ["chunk_id", "source_id", "text", "categories", "metadata", "filterable"]
CHUNK_TYPES = ["int8", "text", "text", "jsonb", "jsonb", "jsonb"]
TABLE_PATTERN = r"^[a-z_][a-z0-9_]{0,62}$"


class PgConnectionParams(EngineParams):
    url: str = kind_field(ParamKind.ENDPOINT, "postgresql+psycopg://postgres@127.0.0.1:5432/postgres", description=(
        "SQLAlchemy URL of the PostgreSQL database, without a password (see `password`)."))
    password: ComponentSpec | None = component_field("credential", None, optional=True, description=(
        "The database password, as a reference (an environment variable), never the password itself."))
    table: str | None = Field(None, pattern=TABLE_PATTERN, description=(
        "Table name (default: derived from what it holds: corpus, model or scoring, shard)."))

    @field_validator("url")
    @classmethod
    def _no_inline_password(cls, url: str) -> str:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            parsed = make_url(url)
        except ArgumentError:
            raise ValueError(f"not a SQLAlchemy URL: {url[:60]!r}") from None
        if parsed.password:
            raise ValueError("the URL holds a password; put it in an environment variable and reference it with "
                             "`password` (a saved tree must never contain a secret)")
        if not parsed.drivername.startswith("postgresql"):
            raise ValueError(f"a PostgreSQL URL is needed (postgresql+psycopg://...), not {parsed.drivername}")
        return url


G = TypeVar("G", bound=PgConnectionParams)


class PgEngine(EngineIndex[G], Generic[G]):
    """An index held in PostgreSQL tables; a subclass creates, fills and searches them."""

    engine_name = "PostgreSQL"
    object_kind = "table"
    needs_pgvector = False  # the vector index creates the extension on first connect

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._engine: Any = None
        self._filterable: bool | None = None

    # -- connection --------------------------------------------------------------
    def display_location(self) -> str:
        from sqlalchemy.engine import make_url

        return make_url(self.params.url).render_as_string(hide_password=True)

    @property
    def engine(self) -> Any:
        if self._engine is None:
            with self.engine_errors("connect"):
                self._engine = self._connect()
        return self._engine

    def _connect(self) -> Any:
        from sqlalchemy import create_engine, event, text
        from sqlalchemy.engine import make_url

        url = make_url(self.params.url)
        if "password" in self.nested:
            url = url.set(password=self.nested["password"].resolve())
        args = {"connect_timeout": 10}
        if not self.needs_pgvector:
            return create_engine(url, connect_args=args, pool_pre_ping=True)
        from pgvector.psycopg import register_vector
        from sqlalchemy.pool import NullPool

        setup = create_engine(url, connect_args=args, poolclass=NullPool)
        try:
            with setup.begin() as connection:
                if connection.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")).first() is None:
                    connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        finally:
            setup.dispose()
        engine = create_engine(url, connect_args=args, pool_pre_ping=True)
        event.listen(engine, "connect", lambda dbapi_connection, _: register_vector(dbapi_connection))
        return engine

    def _close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def describe_error(self, exc: Exception) -> str:
        origin = getattr(exc, "orig", None) or exc
        text = " ".join(str(origin).split())[:300]
        if "password" in self.nested:
            secret = self.nested["password"].resolve_or_none()
            if secret:
                text = text.replace(secret, "***")
        return f"{origin.__class__.__name__}: {text}"

    def _run(self, action: str, sql: str, **params: Any) -> list[Any]:
        from sqlalchemy import text

        with self.engine_errors(action), self.engine.begin() as connection:
            result = connection.execute(text(sql), params)
            return list(result) if result.returns_rows else []

    # -- the engine object -------------------------------------------------------
    def configured_name(self) -> str | None:
        return self.params.table

    def tables(self) -> list[str]:
        """Every table this index owns (the chunk table first)."""
        return [self.name]

    def exists(self) -> bool:
        return bool(self._run("checking the table", "SELECT to_regclass(:name) IS NOT NULL", name=self.name)[0][0])

    def read_record(self) -> dict[str, Any] | None:
        self._ensure_records_table()
        rows = self._run("reading the dashrag record",
                         f"SELECT record FROM {RECORDS_TABLE} WHERE name = :name", name=self.name)
        return dict(rows[0][0]) if rows else None

    def _ensure_records_table(self) -> None:
        self._run("creating the dashrag records table", f"""
            CREATE TABLE IF NOT EXISTS {RECORDS_TABLE} (
                name text PRIMARY KEY, record jsonb NOT NULL, modifications bigint NOT NULL DEFAULT 0)""")

    def modifications(self) -> int:
        rows = self._run("reading the modification count",
                         f"SELECT modifications FROM {RECORDS_TABLE} WHERE name = :name", name=self.name)
        return int(rows[0][0]) if rows else -1

    def count(self) -> int:
        return int(self._run("counting rows", f'SELECT count(*) FROM "{self.name}"')[0][0])

    def drop(self) -> None:
        for table in reversed(self.tables()):
            self._run("dropping the table (--overwrite)", f'DROP TABLE IF EXISTS "{table}"')
        self._run("dropping the dashrag record", f"DELETE FROM {RECORDS_TABLE} WHERE name = :name", name=self.name)

    def create_chunk_table(self, extra_columns: str = "") -> None:
        """The table of chunks with their payload (and ``extra_columns``, SQL column definitions)."""
        self._ensure_records_table()
        self._run("creating the table", f"""
            CREATE TABLE "{self.name}" (chunk_id bigint PRIMARY KEY, source_id text NOT NULL, text text NOT NULL,
                                        categories jsonb NOT NULL, metadata jsonb NOT NULL,
                                        filterable jsonb NOT NULL{extra_columns})""")

    def copy_in(self, action: str, table: str, columns: list[str], types: list[str], rows: Iterable[tuple]) -> None:
        """Write ``rows`` into ``table`` with one binary COPY (the fastest way in), committed at the end."""
        with self.engine_errors(action):
            connection = self.engine.raw_connection()
            try:
                with connection.cursor() as cursor:
                    with cursor.copy(f'COPY "{table}" ({", ".join(columns)}) FROM STDIN WITH (FORMAT BINARY)') as copy:
                        copy.set_types(types)
                        for row in rows:
                            copy.write_row(row)
                connection.commit()
            finally:
                connection.close()

    def chunk_rows(self, rows: np.ndarray) -> Iterator[tuple[int, str, str, Any, Any, Any]]:
        """The chunk columns (``CHUNK_COLUMNS``) of these corpus rows, ready for :meth:`copy_in`."""
        chunks = self.require_infra().chunks
        for start in range(0, len(rows), PAYLOAD_BATCH):  # the texts of a batch in one read of the store
            yield from self._chunk_rows(payloads_of(chunks, rows[start:start + PAYLOAD_BATCH].tolist()))

    @staticmethod
    def _chunk_rows(payloads: list[dict[str, Any]]) -> Iterator[tuple[int, str, str, Any, Any, Any]]:
        from psycopg.types.json import Jsonb

        for payload in payloads:
            yield (payload["chunk_id"], payload["source_id"], payload["text"], Jsonb(payload["categories"]),
                   Jsonb(payload["metadata"]), Jsonb(payload["filterable"]))

    def record_and_guard(self, record: dict[str, Any]) -> None:
        """Index the source ids, write the record, and count every later change to this index's tables."""
        self._run("indexing source ids", f'CREATE INDEX "{self.name}_source" ON "{self.name}" (source_id)')
        self._run("indexing metadata", f'CREATE INDEX "{self.name}_filterable" ON "{self.name}" '
                                       "USING gin (filterable jsonb_path_ops)")
        self._run("writing the dashrag record", f"""
            INSERT INTO {RECORDS_TABLE} (name, record, modifications) VALUES (:name, CAST(:record AS jsonb), 0)
            ON CONFLICT (name) DO UPDATE SET record = EXCLUDED.record, modifications = 0""",
                  name=self.name, record=json.dumps(record))
        # the trigger's argument names the index (a second table of the index is counted against it too)
        self._run("installing the modification counter", f"""
            CREATE OR REPLACE FUNCTION dashrag_count_modification() RETURNS trigger AS $$
            BEGIN
                UPDATE {RECORDS_TABLE} SET modifications = modifications + 1
                WHERE name = COALESCE(TG_ARGV[0], TG_TABLE_NAME);
                RETURN NULL;
            END $$ LANGUAGE plpgsql""")
        for table in self.tables():
            self._run("installing the modification counter", f"""
                CREATE TRIGGER "{table}_modified" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "{table}"
                FOR EACH STATEMENT EXECUTE FUNCTION dashrag_count_modification('{self.name}')""")

    def holds_filter_payload(self) -> bool:
        """Whether the chunk table has ``filterable`` (tables built before metadata filters do not)."""
        if self._filterable is None:
            self._filterable = bool(self._run("reading the table's columns", """
                SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(:name) AND attname = 'filterable'
                AND NOT attisdropped""", name=self.name))
        return self._filterable

    def where_clause(self, where: EngineFilter | None) -> tuple[str, dict[str, Any]]:
        """The restriction as this table's SQL WHERE (a metadata filter as chunk ids on an older table)."""
        if where is not None and where.metadata is not None and not self.holds_filter_payload():
            where = where.without_metadata()
        return sql_filter(where)

    def check_unchanged(self, reference: dict[str, Any]) -> None:
        changes = self.modifications()
        if changes != 0:
            raise EngineError(f"{self.where()} was modified {changes} time(s) since it was built (rows inserted, "
                              "updated or deleted behind the tree's back); rebuild with --overwrite")


def sql_filter(where: EngineFilter | None) -> tuple[str, dict[str, Any]]:
    """The restriction as a SQL WHERE clause and its bound parameters (every condition must hold)."""
    if where is None:
        return "", {}
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if where.source_ids is not None:
        clauses.append("source_id = ANY(:source_ids)")
        params["source_ids"] = list(where.source_ids)
    if where.metadata is not None:
        from sqlalchemy import column
        from sqlalchemy.dialects.postgresql import JSONB

        condition, bound = compile_where(to_sql(where.metadata, column("filterable", JSONB)))
        clauses.append(f"({condition})")
        params.update(bound)
    if where.chunk_ids is not None:
        clauses.append("chunk_id = ANY(:chunk_ids)")
        params["chunk_ids"] = list(where.chunk_ids)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params
