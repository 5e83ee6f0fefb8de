"""PgVectorIndex on a real local PostgreSQL + pgvector: the in-process answers exactly, HNSW close to them,
references not copies, and every mismatch a clear error naming PostgreSQL and the table."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import create_engine, text

import dashrag
from dashrag.core.persistence import read_manifest
from dashrag.engines.local_postgres import free_port
from dashrag.errors import ConfigError, EngineError
from tests.indexes.conftest import assert_answers_like_in_process, dense_tree, ndcg_at_10, ranked_ids


def pg_index(url: str, **params) -> dict:
    return {"component": "PgVectorIndex", "params": {"url": url, **params}}


def execute(url: str, sql: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text(sql))
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def pg_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("pg-tree")


@pytest.fixture(scope="module")
def on_pg_exact(engine_subset, engine_cache, pg_url, pg_folder):
    tree = dashrag.build(dense_tree(pg_index(pg_url, exact=True)), engine_subset.corpus, pg_folder,
                         cache_dir=engine_cache)
    tree.save(pg_folder)
    yield tree
    tree.close()


@pytest.fixture(scope="module")
def on_pg_hnsw(engine_subset, engine_cache, pg_url, tmp_path_factory):
    tree = dashrag.build(dense_tree(pg_index(pg_url)), engine_subset.corpus, tmp_path_factory.mktemp("hnsw"),
                         cache_dir=engine_cache)
    yield tree
    tree.close()


def test_exact_search_returns_the_in_process_ranking_and_scores(on_pg_exact, in_process, engine_subset):
    assert_answers_like_in_process(on_pg_exact, in_process, engine_subset)


def test_exact_search_gives_the_in_process_ndcg_to_four_decimals(on_pg_exact, in_process, engine_subset):
    assert round(ndcg_at_10(on_pg_exact, engine_subset), 4) == round(ndcg_at_10(in_process, engine_subset), 4)


def test_hnsw_at_defaults_recalls_the_exact_top_10(on_pg_hnsw, on_pg_exact, engine_subset):
    queries = list(engine_subset.queries.values())
    approximate, exact = ranked_ids(on_pg_hnsw, queries), ranked_ids(on_pg_exact, queries)
    recall = np.mean([len(set(a) & set(e)) / len(e) for a, e in zip(approximate, exact)])
    assert recall >= 0.98
    assert abs(ndcg_at_10(on_pg_hnsw, engine_subset) - ndcg_at_10(on_pg_exact, engine_subset)) <= 0.005


def explain(url: str, table: str, vector: np.ndarray, exact: bool) -> str:
    literal = "[" + ",".join(map(repr, vector.tolist())) + "]"
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("SET LOCAL enable_indexscan = off" if exact else "SET LOCAL enable_seqscan = off"))
            rows = connection.execute(text(f"EXPLAIN SELECT chunk_id FROM {table} "
                                           f"ORDER BY embedding <=> '{literal}' LIMIT 10")).all()
    finally:
        engine.dispose()
    return "\n".join(r[0] for r in rows)


def test_hnsw_and_exact_nodes_use_different_tables_and_plans(on_pg_hnsw, on_pg_exact, pg_url, in_process):
    assert on_pg_hnsw.index.name != on_pg_exact.index.name
    vector = in_process.vectors_for([int(in_process.infra.chunks.ids[0])])[0]
    assert "_hnsw" in explain(pg_url, on_pg_hnsw.index.name, vector, exact=False)
    assert "_hnsw" not in explain(pg_url, on_pg_exact.index.name, vector, exact=True)


def test_a_saved_tree_holds_a_reference_without_secrets(on_pg_exact, pg_folder, pg_url):
    manifest = read_manifest(pg_folder)
    assert not any(name.startswith("nodes/") and name.endswith(".npy") for name in manifest["files"])  # in PostgreSQL
    reference = json.loads((pg_folder / manifest["snapshot"] / "nodes/root/index.json").read_text())
    assert reference["engine"] == "PostgreSQL" and reference["table"].startswith("dashrag_")
    assert reference["location"] == pg_url
    assert reference["record"]["count"] == len(on_pg_exact.infra.chunks)


def test_a_loaded_tree_answers_like_the_built_one(on_pg_exact, pg_folder, engine_subset):
    queries = list(engine_subset.queries.values())[:5]
    loaded = dashrag.load(pg_folder)
    try:
        assert ranked_ids(loaded, queries) == ranked_ids(on_pg_exact, queries)
    finally:
        loaded.close()


def test_rebuilding_the_same_node_reuses_the_table(on_pg_exact, engine_subset, engine_cache, pg_url, tmp_path):
    tree = dashrag.build(dense_tree(pg_index(pg_url, exact=True)), engine_subset.corpus, tmp_path,
                         cache_dir=engine_cache)
    try:
        assert tree.index.name == on_pg_exact.index.name and tree.index.modifications() == 0
    finally:
        tree.close()


def save_exact_tree(table: str, engine_subset, engine_cache, pg_url: str, folder) -> None:
    """An exact pgvector tree on ``table`` saved to ``folder`` and closed: what a later load meets."""
    tree = dashrag.build(dense_tree(pg_index(pg_url, table=table, exact=True)), engine_subset.corpus, folder,
                         cache_dir=engine_cache, overwrite=True)
    tree.save(folder)
    tree.close()


def test_a_table_edited_behind_the_trees_back_is_refused_on_load(engine_subset, engine_cache, pg_url, tmp_path):
    save_exact_tree("edited", engine_subset, engine_cache, pg_url, tmp_path)
    execute(pg_url, "UPDATE edited SET text = 'changed' WHERE chunk_id = 0")
    with pytest.raises(EngineError, match=r"PostgreSQL table 'edited' at .* modified 1 time"):
        dashrag.load(tmp_path)


def test_a_table_of_another_dimension_is_refused_on_load(engine_subset, engine_cache, pg_url, tmp_path):
    save_exact_tree("resized", engine_subset, engine_cache, pg_url, tmp_path)
    execute(pg_url, "ALTER TABLE resized DROP COLUMN embedding")
    execute(pg_url, "ALTER TABLE resized ADD COLUMN embedding vector(8)")
    with pytest.raises(EngineError, match=r"PostgreSQL table 'resized' at .* 8-dimensional vectors.* gives 384"):
        dashrag.load(tmp_path)


def test_a_foreign_table_is_refused_and_left_untouched(engine_subset, engine_cache, pg_url, tmp_path):
    execute(pg_url, "CREATE TABLE IF NOT EXISTS theirs (id int)")
    execute(pg_url, "INSERT INTO theirs VALUES (1)")
    with pytest.raises(EngineError, match=r"PostgreSQL table 'theirs' .* not written by dashrag.*--overwrite"):
        dashrag.build(dense_tree(pg_index(pg_url, table="theirs")), engine_subset.corpus, tmp_path,
                      cache_dir=engine_cache)
    engine = create_engine(pg_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM theirs")).scalar() >= 1
    engine.dispose()


def test_an_unreachable_server_is_an_error_naming_postgresql_and_the_table(engine_subset, engine_cache, tmp_path):
    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(EngineError, match=r"PostgreSQL table 'docs' at postgresql\+psycopg://postgres@127.0.0.1:\d+"
                                          r"/postgres: .* failed"):
        dashrag.build(dense_tree(pg_index(url, table="docs")), engine_subset.corpus, tmp_path, cache_dir=engine_cache)


def test_a_password_in_the_url_is_refused_by_the_config():
    with pytest.raises(ConfigError, match="holds a password"):
        dashrag.validate_and_transform(dense_tree(pg_index("postgresql+psycopg://u:secret@127.0.0.1/db")),
                                       "retriever")
