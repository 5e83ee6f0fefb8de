"""PgKeywordIndex: a BM25 node's term weights in PostgreSQL, as a sparse table beside the chunk table.

Two tables: ``<name>`` holds the chunks (``chunk_id``, ``source_id``, ``text``,
``categories``: what the restriction filters on), ``<name>_terms`` one row per
(``term_id``, ``chunk_id``, ``weight``): each chunk's stored BM25 weights under the node's
term ids (``keyword_base.py``), indexed by term (with the chunk and weight included, so
a query reads posting lists from the index alone). A query joins its (term, count)
pairs to the postings and sums ``weight × count`` per chunk: the in-process BM25 score,
computed in double precision, ordered by score then chunk id (the in-process tie rule),
the restriction in the ``WHERE`` of the same statement. Exact, always.
Connection, records, modification counting and filters are ``postgres_engine.py``'s,
shared with pgvector; the trigger counts changes to both tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from pydantic import Field

from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.errors import EngineError
from dashrag.indexes.base import Hits, IndexIdentity
from dashrag.indexes.engine import EngineFilter, engine_filter
from dashrag.indexes.keyword_base import KeywordIndex, QueryTerms, document_weights, ranked_hits
from dashrag.indexes.postgres_engine import CHUNK_COLUMNS, CHUNK_TYPES, PgConnectionParams, PgEngine
from dashrag.scoring.bm25 import BM25Weights

TERMS_SUFFIX = "_terms"


class PgKeywordParams(PgConnectionParams):
    table: str | None = Field(None, pattern=r"^[a-z_][a-z0-9_]{0,56}$", description=(
        "Chunk table name (the weights go to `<table>_terms`; default: derived from corpus, scoring and shard)."))


@register(kind="keyword_index", icon="Database", category="index",
          en=("PostgreSQL term weights", "BM25 term weights in a PostgreSQL sparse table (exact)."),
          es=("Pesos de términos en PostgreSQL", "Pesos BM25 de los términos en una tabla dispersa de PostgreSQL "
              "(exacta)."),
          representation="PostgreSQL BM25 {table}")
class PgKeywordIndex(PgEngine[PgKeywordParams], KeywordIndex[PgKeywordParams]):
    def add(self, weights: BM25Weights, identity: IndexIdentity) -> None:
        super().add(document_weights(weights), identity)

    @property
    def terms_table(self) -> str:
        return f"{self.name}{TERMS_SUFFIX}"

    def tables(self) -> list[str]:
        return [self.name, self.terms_table]

    def check_layout(self, identity: IndexIdentity) -> None:
        found = self._run("checking the term table", "SELECT to_regclass(:name) IS NOT NULL", name=self.terms_table)
        if not found[0][0]:
            raise EngineError(f"{self.where()} has no term table {self.terms_table!r} (not a dashrag keyword index)")

    def create(self, dimension: int, metric: str) -> None:
        self.create_chunk_table()
        self._run("creating the term table", f"""
            CREATE TABLE "{self.terms_table}" (term_id integer NOT NULL, chunk_id bigint NOT NULL,
                                               weight real NOT NULL)""")

    def upload(self, rows: np.ndarray, weights: sp.csr_matrix) -> None:
        self.copy_in("copying chunks in", self.name, CHUNK_COLUMNS, CHUNK_TYPES, self.chunk_rows(rows))
        ids = self.require_infra().chunks.ids[rows]
        chunk_of_entry = np.repeat(ids, np.diff(weights.indptr))
        self.copy_in("copying term weights in", self.terms_table, ["term_id", "chunk_id", "weight"],
                     ["int4", "int8", "float4"],
                     zip(weights.indices.tolist(), chunk_of_entry.tolist(), weights.data.tolist()))

    def finish_build(self, record: dict[str, Any]) -> None:
        self._run("indexing the term weights", f"""
            CREATE INDEX "{self.terms_table}_term" ON "{self.terms_table}" (term_id) INCLUDE (chunk_id, weight)""")
        self.record_and_guard(record)
        for table in self.tables():  # the planner needs the postings' statistics to join them well
            self._run("analysing the tables", f'ANALYZE "{table}"')

    def search(self, queries: list[QueryTerms], k: int, restriction: Restriction | None,
               chunk_ids: list[int] | None = None) -> list[Hits]:
        from sqlalchemy import text

        chunks = self.require_infra().chunks
        where = EngineFilter(chunk_ids=chunk_ids) if chunk_ids is not None else engine_filter(restriction, chunks)
        condition, params = self.where_clause(where)
        chunk_join = f'JOIN "{self.name}" USING (chunk_id)' if condition else ""
        statement = text(f"""
            SELECT chunk_id, SUM(CAST(p.weight AS float8) * q.n) AS score
            FROM "{self.terms_table}" p
            JOIN unnest(CAST(:terms AS integer[]), CAST(:counts AS float8[])) AS q(term_id, n) USING (term_id)
            {chunk_join} {condition}
            GROUP BY chunk_id ORDER BY score DESC, chunk_id LIMIT :k""")
        hits: list[Hits] = []
        with self.engine_errors("searching"), self.engine.begin() as connection:
            for terms, counts in queries:
                found = connection.execute(statement, {
                    **params, "terms": np.asarray(terms).tolist(), "counts": np.asarray(counts, dtype=np.float64)
                    .tolist(), "k": int(k)}).all() if len(terms) else []
                ids = [int(r[0]) for r in found]
                hits.append(ranked_hits(ids, [float(r[1]) for r in found], chunks.rows_of(ids), k))
        return hits
