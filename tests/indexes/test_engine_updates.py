"""Updating trees whose indexes live on an engine (Qdrant local mode, PostgreSQL): random sequences of adds,
replaces and removes answer as rebuilds (BM25 weights as sparse vectors and tables, dense vectors), and the
object the tree searched before an update is dropped once the update is published (no text left behind)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from sqlalchemy import create_engine, inspect

import dashrag
from tests.core.test_updating import DENSE, bm25, changed, check_property, saved_tree, steps

QDRANT_KEYWORD = {"component": "QdrantKeywordIndex", "params": {}}
QDRANT_VECTORS = {"component": "QdrantVectorIndex", "params": {"exact": True}}


def with_index(config: dict, index: dict) -> dict:
    return {**config, "params": {**config["params"], "index": index}}


def two_shards(config: dict, index: dict) -> dict:
    """``config`` twice, each child holding half of the chunks on its own ``index``, fused as shards are."""
    children = [with_index(config, {**index, "params": {**index["params"], "shards": 2, "shard": i}}) for i in (0, 1)]
    return {"component": "ParallelRetriever", "params": {"children": children, "merge_strategy": "max_score",
                                                         "top_k": 8}}


@pytest.mark.slow
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_of_bm25_on_qdrant_answer_as_rebuilds(abstracts, tmp_path, sequence):
    check_property(with_index(bm25("bm25plus", 1.0), QDRANT_KEYWORD), abstracts, tmp_path, sequence)


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_of_dense_on_qdrant_answer_as_rebuilds(abstracts, tmp_path, start_embeddings, sequence):
    check_property(with_index(DENSE, QDRANT_VECTORS), abstracts, tmp_path, sequence, start_cache=start_embeddings)


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_of_bm25_sharded_on_qdrant_answer_as_rebuilds(abstracts, tmp_path, sequence):
    check_property(two_shards(bm25("okapi"), QDRANT_KEYWORD), abstracts, tmp_path, sequence)


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_of_dense_sharded_on_qdrant_answer_as_rebuilds(abstracts, tmp_path, start_embeddings,
                                                                       sequence):
    """Each shard reads back only its own kept vectors and embeds only what was added."""
    check_property(two_shards(DENSE, QDRANT_VECTORS), abstracts, tmp_path, sequence, start_cache=start_embeddings)


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_of_bm25_on_postgresql_answer_as_rebuilds(abstracts, tmp_path, pg_url, sequence):
    index = {"component": "PgKeywordIndex", "params": {"url": pg_url}}
    check_property(with_index(bm25("okapi"), index), abstracts, tmp_path, sequence)


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_of_dense_on_pgvector_answer_as_rebuilds(abstracts, tmp_path, pg_url, start_embeddings,
                                                                sequence):
    index = {"component": "PgVectorIndex", "params": {"url": pg_url, "exact": True}}
    check_property(with_index(DENSE, index), abstracts, tmp_path, sequence, start_cache=start_embeddings)


def test_the_replaced_qdrant_collection_is_dropped_once_the_update_is_published(abstracts, tmp_path):
    folder = saved_tree(with_index(bm25("okapi"), QDRANT_KEYWORD), abstracts[:8], tmp_path)

    def collections() -> set[str]:  # embedded Qdrant (Qdrant Edge): one folder per collection
        return {p.name for p in (folder / "qdrant" / "edge").iterdir() if p.is_dir()}

    before = collections()
    dashrag.update(folder, add=[changed(abstracts[1])], remove=[abstracts[2].id])
    after = collections()
    assert len(before) == len(after) == 1 and before != after


def test_the_replaced_postgresql_table_is_dropped_once_the_update_is_published(abstracts, tmp_path, pg_url):
    index = {"component": "PgKeywordIndex", "params": {"url": pg_url}}
    engine = create_engine(pg_url)

    def tables() -> set[str]:
        return set(inspect(engine).get_table_names()) - {"dashrag_indexes"}  # the records table stays

    start = tables()
    folder = saved_tree(with_index(bm25("lucene"), index), abstracts[40:46], tmp_path)
    built = tables() - start
    dashrag.update(folder, remove=[abstracts[41].id])
    now = tables() - start
    engine.dispose()
    assert built and now and not built & now and len(now) == len(built)
