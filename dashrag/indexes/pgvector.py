"""PgVectorIndex: the dense node's vectors in a PostgreSQL table with pgvector (SQLAlchemy + psycopg).

Where the table lives, its chunk columns, the ``dashrag_indexes`` record with its
modification counter and the SQL filter are shared with the keyword index
(``postgres_engine.py``). This module adds the vectors:

* **What**: a column ``embedding vector(d)`` beside the chunk columns, written with one
  binary COPY; name derived from corpus, model, metric and shard unless ``table`` names it.
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

from typing import Any

import numpy as np
from pydantic import Field

from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.errors import EngineError
from dashrag.indexes.base import Hits, VectorIndex
from dashrag.indexes.engine import engine_filter
from dashrag.indexes.postgres_engine import (  # noqa: F401  (RECORDS_TABLE, sql_filter: re-exported)
    CHUNK_COLUMNS,
    CHUNK_TYPES,
    RECORDS_TABLE,
    PgConnectionParams,
    PgEngine,
    sql_filter,
)

OPERATORS = {"cosine": "<=>", "dot": "<#>", "euclidean": "<->", "manhattan": "<+>"}
OPCLASSES = {"cosine": "vector_cosine_ops", "dot": "vector_ip_ops", "euclidean": "vector_l2_ops",
             "manhattan": "vector_l1_ops"}
BUILD_MEMORY = "1GB"  # maintenance_work_mem of the HNSW build: 200,000 384-d vectors and their graph fit


class PgVectorParams(PgConnectionParams):
    exact: bool = Field(False, description=(
        "Exact (brute-force) search inside the engine; false: the engine's HNSW index (approximate, faster at scale)."))
    hnsw_ef: int = Field(100, ge=1, le=1000, description="HNSW search breadth (pgvector's hnsw.ef_search).")
    hnsw_m: int = Field(16, ge=2, le=100, description="HNSW graph degree (built once, with the table).")
    hnsw_ef_construction: int = Field(64, ge=4, le=1000, description="HNSW build breadth.")


def stored_vector(value: Any) -> np.ndarray:
    """A vector as the driver returns it: pgvector's ``Vector`` (its adapter registered), or a plain sequence."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


@register(kind="vector_index", icon="Database", category="index",
          en=("PostgreSQL + pgvector", "Chunk vectors in a PostgreSQL table with pgvector, exact or HNSW."),
          es=("PostgreSQL + pgvector",
              "Vectores de los fragmentos en una tabla de PostgreSQL con pgvector, exacta o HNSW."),
          representation="pgvector {table} exact={exact}")
class PgVectorIndex(PgEngine[PgVectorParams], VectorIndex[PgVectorParams]):
    needs_pgvector = True

    def structure(self) -> dict[str, Any]:
        p = self.params
        return {"hnsw": None if p.exact else {"m": p.hnsw_m, "ef_construction": p.hnsw_ef_construction}}

    # -- the engine object -------------------------------------------------------
    def actual_dimension(self) -> int:
        rows = self._run("reading the vector column", """
            SELECT a.atttypmod FROM pg_attribute a
            WHERE a.attrelid = to_regclass(:name) AND a.attname = 'embedding' AND NOT a.attisdropped""",
                         name=self.name)
        if not rows:
            raise EngineError(f"{self.where()} has no 'embedding' column")
        return int(rows[0][0])

    def create(self, dimension: int, metric: str) -> None:
        self.create_chunk_table(f", embedding vector({int(dimension)}) NOT NULL")

    def upload(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        self.copy_in("copying vectors in", self.name, [*CHUNK_COLUMNS, "embedding"], [*CHUNK_TYPES, "vector"],
                     (chunk + (vector,) for chunk, vector in zip(self.chunk_rows(rows), vectors)))

    def finish_build(self, record: dict[str, Any]) -> None:
        metric = record["metric"]
        if not self.params.exact:
            p = self.params
            from sqlalchemy import text

            with self.engine_errors("building the HNSW index"), self.engine.begin() as connection:
                # pgvector builds fast only while the graph fits in maintenance_work_mem (default 64 MB: about
                # 40,000 384-d vectors); above it the build slows many times over
                connection.execute(text(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'"))
                connection.execute(text(f"""
                    CREATE INDEX "{self.name}_hnsw" ON "{self.name}" USING hnsw (embedding {OPCLASSES[metric]})
                    WITH (m = {int(p.hnsw_m)}, ef_construction = {int(p.hnsw_ef_construction)})"""))
        self.record_and_guard(record)

    # -- search ------------------------------------------------------------------
    def search(self, query_vectors: np.ndarray, k: int, restriction: Restriction | None) -> list[Hits]:
        chunks = self.require_infra().chunks
        metric = str(self._record["metric"]) if self._record else "cosine"
        where, params = self.where_clause(engine_filter(restriction, chunks))
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
        found = {int(r[0]): stored_vector(r[1]) for r in self._run(
            "reading vectors", f'SELECT chunk_id, embedding FROM "{self.name}" WHERE chunk_id = ANY(:ids)', ids=ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            raise EngineError(f"{self.where()} lacks the rows of chunk(s) {missing[:10]} (another shard, or edited)")
        return np.stack([found[i] for i in ids]) if ids else np.zeros((0, self.dimension), dtype=np.float32)

