"""One Qdrant Edge shard answers many threads at once exactly as it answers one: ``dashrag serve`` runs queries
on a worker pool and the library is used from threads, while a process holds each Edge shard open once (it locks
the shard's write-ahead log), so every query of a tree goes through the same shard object."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

import dashrag
from tests.indexes.conftest import bm25_tree, dense_tree

THREADS = 8
ROUNDS = 3


def answers(tree, queries: list[str]) -> list[list[tuple[int, float]]]:
    return [[(c.id, round(c.score, 6)) for c in tree.retrieve(q, top_k=10)[0]] for q in queries]


def assert_concurrent_answers_equal_serial(tree, queries: list[str]) -> None:
    serial = answers(tree, queries)
    # each thread runs the queries in its own order, so different queries meet in the shard at the same moment
    orders = [queries[i:] + queries[:i] for i in range(THREADS)] * ROUNDS
    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(lambda order: dict(zip(order, answers(tree, order))), orders))
    expected = dict(zip(queries, serial))
    for result in results:
        assert result == expected


def assert_saved_tree_answers_concurrent_threads_as_one(config: dict, subset, folder, **build_args) -> None:
    """Build ``config`` on ``subset``, save it, and check the loaded tree (one Edge shard per index)."""
    built = dashrag.build(config, subset.corpus, folder, **build_args)
    built.save(folder)
    built.close()
    tree = dashrag.load(folder)
    try:
        assert_concurrent_answers_equal_serial(tree, list(subset.queries.values())[:20])
    finally:
        tree.close()


def test_one_edge_bm25_shard_answers_concurrent_threads_as_it_answers_one(engine_subset, tmp_path):
    assert_saved_tree_answers_concurrent_threads_as_one(bm25_tree({"component": "QdrantKeywordIndex", "params": {}}),
                                                        engine_subset, tmp_path)


@pytest.mark.slow
def test_one_edge_hnsw_shard_answers_concurrent_threads_as_it_answers_one(engine_subset, engine_cache, tmp_path):
    index = {"component": "QdrantVectorIndex", "params": {"exact": False, "hnsw_threshold_kb": 1}}
    assert_saved_tree_answers_concurrent_threads_as_one(dense_tree(index), engine_subset, tmp_path,
                                                        cache_dir=engine_cache)
