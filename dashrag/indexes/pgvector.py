"""PgVectorIndex: the dense node's vectors in a PostgreSQL table with pgvector (SQLAlchemy + psycopg).

* **Where**: ``url`` is a SQLAlchemy URL (``postgresql+psycopg://user@127.0.0.1:5432/db``)
  *without* a password; the password, if the server wants one, is a credential
  reference (``password``: an environment variable), read when connecting, never saved.
  ``dashrag pg start`` runs a local server with pgvector for people who have none.
* **What**: one table per distinct node (name derived from corpus, model, metric and
  shard unless ``table`` names it): ``chunk_id`` (primary key), ``source_id``, ``text``,
  ``categories`` (jsonb), ``embedding vector(d)``, written with one binary COPY. What it
  holds is a row of ``dashrag_indexes``; a statement-level trigger counts every later
  INSERT, UPDATE, DELETE or TRUNCATE on the table there, so a table edited behind the
  tree's back is refused on load.
* **Search**: ``ORDER BY embedding <op> :query LIMIT k`` with the restriction as the SQL
  ``WHERE`` of the same statement. ``exact`` turns index scans off for the query (a
  sequential scan and sort: exact); otherwise the HNSW index (built after the COPY when
  ``exact`` is false) answers with ``hnsw.ef_search = hnsw_ef`` (sequential scans off, so
  even a small table uses it); under a restriction the planner chooses between the
  HNSW index with pgvector's iterative scan (so a filtered query still finds k rows
  where k exist) and the filter's own index followed by an exact sort.
  Scores become the in-process ones: cosine ``1 − distance``, dot and euclidean negated.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
from pydantic import Field, field_validator

from dashrag.core.params import ComponentSpec, component_field
from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.errors import DashragError, EngineError
from dashrag.indexes.base import Hits
from dashrag.indexes.engine import EngineFilter, EngineIndexParams, EngineVectorIndex, engine_filter, payload_of

RECORDS_TABLE = "dashrag_indexes"
OPERATORS = {"cosine": "<=>", "dot": "<#>", "euclidean": "<->"}
OPCLASSES = {"cosine": "vector_cosine_ops", "dot": "vector_ip_ops", "euclidean": "vector_l2_ops"}
TABLE_PATTERN = r"^[a-z_][a-z0-9_]{0,62}$"


class PgVectorParams(EngineIndexParams):
    url: str = Field("postgresql+psycopg://postgres@127.0.0.1:5432/postgres", description=(
        "SQLAlchemy URL of the PostgreSQL database, without a password (see `password`)."))
    password: ComponentSpec | None = component_field("credential", None, optional=True, description=(
        "The database password, as a reference (an environment variable), never the password itself."))
    table: str | None = Field(None, pattern=TABLE_PATTERN, description=(
        "Table name (default: derived from corpus, model, metric and shard)."))
    hnsw_ef: int = Field(100, ge=1, le=1000, description="HNSW search breadth (pgvector's hnsw.ef_search).")
    hnsw_m: int = Field(16, ge=2, le=100, description="HNSW graph degree (built once, with the table).")
    hnsw_ef_construction: int = Field(64, ge=4, le=1000, description="HNSW build breadth.")

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


@register(kind="vector_index", icon="Database", category="index",
          en=("PostgreSQL + pgvector", "Chunk vectors in a PostgreSQL table with pgvector, exact or HNSW."),
          es=("PostgreSQL + pgvector",
              "Vectores de los fragmentos en una tabla de PostgreSQL con pgvector, exacta o HNSW."),
          representation="pgvector {table} exact={exact}")
class PgVectorIndex(EngineVectorIndex[PgVectorParams]):
    engine_name = "PostgreSQL"
    object_kind = "table"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._engine: Any = None

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
        from pgvector.psycopg import register_vector
        from sqlalchemy import create_engine, event, text
        from sqlalchemy.engine import make_url

        url = make_url(self.params.url)
        if "password" in self.nested:
            url = url.set(password=self.nested["password"].resolve())
        args = {"connect_timeout": 10}
        setup = create_engine(url, connect_args=args, poolclass=_null_pool())
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

    @contextmanager
    def engine_errors(self, action: str) -> Iterator[None]:
        """Any failure of the driver becomes an EngineError naming PostgreSQL, the table and the action."""
        try:
            yield
        except DashragError:
            raise
        except Exception as exc:  # SQLAlchemy / psycopg errors of every kind
            raise EngineError(f"{self.where()}: {action} failed: {self._describe(exc)}") from None

    def _describe(self, exc: Exception) -> str:
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

    def structure(self) -> dict[str, Any]:
        p = self.params
        return {"hnsw": None if p.exact else {"m": p.hnsw_m, "ef_construction": p.hnsw_ef_construction}}

    # -- the engine object -------------------------------------------------------
    def configured_name(self) -> str | None:
        return self.params.table

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

    def actual_dimension(self) -> int:
        rows = self._run("reading the vector column", """
            SELECT a.atttypmod FROM pg_attribute a
            WHERE a.attrelid = to_regclass(:name) AND a.attname = 'embedding' AND NOT a.attisdropped""",
                         name=self.name)
        if not rows:
            raise EngineError(f"{self.where()} has no 'embedding' column")
        return int(rows[0][0])

    def drop(self) -> None:
        self._run("dropping the table (--overwrite)", f'DROP TABLE IF EXISTS "{self.name}"')
        self._run("dropping the dashrag record", f"DELETE FROM {RECORDS_TABLE} WHERE name = :name", name=self.name)

    def create(self, dimension: int, metric: str) -> None:
        self._ensure_records_table()
        self._run("creating the table", f"""
            CREATE TABLE "{self.name}" (chunk_id bigint PRIMARY KEY, source_id text NOT NULL, text text NOT NULL,
                                        categories jsonb NOT NULL, embedding vector({int(dimension)}) NOT NULL)""")

    def upload(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        from psycopg.types.json import Jsonb

        chunks = self.require_infra().chunks
        with self.engine_errors("copying vectors in"):
            connection = self.engine.raw_connection()
            try:
                with connection.cursor() as cursor:
                    with cursor.copy(f'COPY "{self.name}" (chunk_id, source_id, text, categories, embedding) '
                                     "FROM STDIN WITH (FORMAT BINARY)") as copy:
                        copy.set_types(["int8", "text", "text", "jsonb", "vector"])
                        for row, vector in zip(rows.tolist(), vectors):
                            payload = payload_of(chunks, row)
                            copy.write_row((payload["chunk_id"], payload["source_id"], payload["text"],
                                            Jsonb(payload["categories"]), vector))
                connection.commit()
            finally:
                connection.close()

    def finish_build(self, record: dict[str, Any]) -> None:
        metric = record["metric"]
        if not self.params.exact:
            p = self.params
            self._run("building the HNSW index", f"""
                CREATE INDEX "{self.name}_hnsw" ON "{self.name}" USING hnsw (embedding {OPCLASSES[metric]})
                WITH (m = {int(p.hnsw_m)}, ef_construction = {int(p.hnsw_ef_construction)})""")
        self._run("indexing source ids", f'CREATE INDEX "{self.name}_source" ON "{self.name}" (source_id)')
        self._run("writing the dashrag record", f"""
            INSERT INTO {RECORDS_TABLE} (name, record, modifications) VALUES (:name, CAST(:record AS jsonb), 0)
            ON CONFLICT (name) DO UPDATE SET record = EXCLUDED.record, modifications = 0""",
                  name=self.name, record=json.dumps(record))
        self._run("installing the modification counter", f"""
            CREATE OR REPLACE FUNCTION dashrag_count_modification() RETURNS trigger AS $$
            BEGIN
                UPDATE {RECORDS_TABLE} SET modifications = modifications + 1 WHERE name = TG_TABLE_NAME;
                RETURN NULL;
            END $$ LANGUAGE plpgsql""")
        self._run("installing the modification counter", f"""
            CREATE TRIGGER "{self.name}_modified" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "{self.name}"
            FOR EACH STATEMENT EXECUTE FUNCTION dashrag_count_modification()""")

    def check_unchanged(self, reference: dict[str, Any]) -> None:
        changes = self.modifications()
        if changes != 0:
            raise EngineError(f"{self.where()} was modified {changes} time(s) since it was built (rows inserted, "
                              "updated or deleted behind the tree's back); rebuild with --overwrite")

    # -- search ------------------------------------------------------------------
    def search(self, query_vectors: np.ndarray, k: int, restriction: Restriction | None) -> list[Hits]:
        chunks = self.require_infra().chunks
        metric = str(self._record["metric"]) if self._record else "cosine"
        where, params = sql_filter(engine_filter(restriction, chunks))
        op = OPERATORS[metric]
        sql = (f'SELECT chunk_id, embedding {op} :query AS distance FROM "{self.name}" {where} '
               f"ORDER BY embedding {op} :query LIMIT :k")
        from sqlalchemy import text

        statement = text(sql)
        hits: list[Hits] = []
        with self.engine_errors("searching"), self.engine.begin() as connection:
            if self.params.exact:
                connection.execute(text("SET LOCAL enable_indexscan = off"))
            else:
                connection.execute(text(f"SET LOCAL hnsw.ef_search = {int(self.params.hnsw_ef)}"))
                if where:  # the planner picks: a selective filter is answered exactly through its own index
                    connection.execute(text("SET LOCAL hnsw.iterative_scan = strict_order"))
                else:  # HNSW was asked for: a small table would otherwise be scanned instead
                    connection.execute(text("SET LOCAL enable_seqscan = off"))
            for query in np.asarray(query_vectors, dtype=np.float32):
                found = connection.execute(statement, {**params, "query": query, "k": int(k)}).all()
                ids = [int(r[0]) for r in found]
                distances = np.asarray([r[1] for r in found], dtype=np.float64)
                scores = 1.0 - distances if metric == "cosine" else -distances
                hits.append((chunks.rows_of(ids), scores.astype(np.float32)))
        return hits

    def vectors_for(self, rows: np.ndarray) -> np.ndarray:
        ids = self.require_infra().chunks.ids[np.asarray(rows, dtype=np.int64)].tolist()
        found = {int(r[0]): np.asarray(r[1], dtype=np.float32) for r in self._run(
            "reading vectors", f'SELECT chunk_id, embedding FROM "{self.name}" WHERE chunk_id = ANY(:ids)', ids=ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            raise EngineError(f"{self.where()} lacks the rows of chunk(s) {missing[:10]} (another shard, or edited)")
        return np.stack([found[i] for i in ids]) if ids else np.zeros((0, self.dimension), dtype=np.float32)


def sql_filter(where: EngineFilter | None) -> tuple[str, dict[str, Any]]:
    """The restriction as a SQL WHERE clause and its bound parameters (every condition must hold)."""
    if where is None:
        return "", {}
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if where.source_ids is not None:
        clauses.append("source_id = ANY(:source_ids)")
        params["source_ids"] = list(where.source_ids)
    for i, (name, values) in enumerate((where.categories or {}).items()):
        clauses.append(f"jsonb_exists_any(categories -> :category_{i}, CAST(:values_{i} AS text[]))")
        params[f"category_{i}"], params[f"values_{i}"] = name, list(values)
    if where.chunk_ids is not None:
        clauses.append("chunk_id = ANY(:chunk_ids)")
        params["chunk_ids"] = list(where.chunk_ids)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def _null_pool() -> Any:
    from sqlalchemy.pool import NullPool

    return NullPool
