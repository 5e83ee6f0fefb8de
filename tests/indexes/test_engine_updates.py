"""Updating trees whose indexes live on an engine (Qdrant local mode, PostgreSQL): random sequences of adds,
replaces and removes answer as rebuilds (BM25 weights as sparse vectors and tables, dense vectors), and the
object the tree searched before an update is dropped once the update is published (no text left behind)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, inspect

import dashrag
from tests.core.test_updating import DENSE, bm25, changed, check_property, keep_tombstones, saved_tree, steps

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
@given(sequence=steps, by_tombstone=st.booleans())
def test_random_updates_of_bm25_on_qdrant_answer_as_rebuilds(abstracts, tmp_path, monkeypatch, sequence, by_tombstone):
    """``by_tombstone``: the counts keep removed rows as tombstones; the engine is given the live rows' weights."""
    if by_tombstone:
        keep_tombstones(monkeypatch)
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
@given(sequence=steps, by_tombstone=st.booleans())
def test_random_updates_of_bm25_on_postgresql_answer_as_rebuilds(abstracts, tmp_path, pg_url, monkeypatch, sequence,
                                                                 by_tombstone):
    if by_tombstone:
        keep_tombstones(monkeypatch)
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


# a graph for the first tree's ~60 chunks (~90 KB of vectors), none for the dozen an update adds (below 40 KB: Edge
# leaves them in a small segment searched exactly, as it leaves 10 documents added to a million); compaction at every
# update (the copy of the base's files; the delta and the tombstones before it: tests/indexes/test_qdrant_segments.py)
QDRANT_HNSW = {"component": "QdrantVectorIndex", "params": {"hnsw_threshold_kb": 40, "compact_fraction": 0}}
COMPACTING = {"component": "QdrantVectorIndex", "params": {"exact": True, "compact_fraction": 0}}


def edge_segments(folder) -> dict[str, set[str]]:
    """Each embedded collection's Qdrant Edge segments (their folder names) in a saved tree."""
    return {p.name: {s.name for s in (p / "shard" / "segments").iterdir()}
            for p in (folder / "qdrant" / "edge").iterdir() if p.is_dir()}


@pytest.mark.slow
def test_a_dense_compaction_on_edge_changes_a_copy_of_the_collection_not_a_rebuild(abstracts, tmp_path,
                                                                              start_embeddings):
    """The new collection holds the old one's segments (the HNSW graph copied with its files, not built again),
    the old one is dropped once published, and the tree answers as a rebuild: exactly with an exact index (HNSW's
    answers are those of a graph, compared with a rebuild's in the property above with ``exact``)."""
    folder = saved_tree(with_index(DENSE, QDRANT_HNSW), abstracts[:12], tmp_path, cache_dir=start_embeddings)
    before = edge_segments(folder)
    dashrag.update(folder, add=[abstracts[20], changed(abstracts[3])], remove=[abstracts[5].id])
    after = edge_segments(folder)
    assert len(before) == len(after) == 1 and before.keys() != after.keys()
    assert next(iter(before.values())) <= next(iter(after.values()))
    tree = dashrag.load(folder)
    try:
        assert tree.index.store.indexed_vectors(tree.index.name) > 0  # the copied graph is searched
        documents = {hit.document_id for hit in tree.retrieve("cancer risk and mutations", top_k=50)[0]}
    finally:
        tree.close()
    assert abstracts[20].id in documents and abstracts[5].id not in documents


@pytest.mark.slow
def test_a_dense_update_on_edge_that_brings_a_new_filtered_field_rebuilds_the_collection(abstracts, tmp_path,
                                                                                        start_embeddings):
    """A compaction over a field the old corpus did not have needs its payload index made before the points: the
    rebuild, and a filter on it answers after the update (through a delta: test_qdrant_segments.py)."""
    exact = with_index(DENSE, COMPACTING)
    folder = saved_tree(exact, abstracts[:12], tmp_path, cache_dir=start_embeddings)
    before = edge_segments(folder)
    dated = replace(abstracts[20], metadata={**abstracts[20].metadata, "year": 2020})
    dashrag.update(folder, add=[dated])
    after = edge_segments(folder)
    assert not next(iter(before.values())) & next(iter(after.values()))
    tree = dashrag.load(folder)
    try:
        hits = tree.retrieve("cancer risk and mutations", filters={"year": {"$gte": 2019}})[0]
    finally:
        tree.close()
    assert [hit.document_id for hit in hits] and {hit.document_id for hit in hits} == {dated.id}
