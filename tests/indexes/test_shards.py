"""Sharding in the tree: a ParallelRetriever over two PostgreSQL servers, each holding half of the corpus,
fused by the maximum of the raw scores, returns exactly the top-10 of one server holding it all."""

from __future__ import annotations

import numpy as np
import pytest

import dashrag
from tests.indexes.conftest import dense_tree


def sharded_tree(urls: list[str], exact: bool) -> dict:
    children = [dense_tree({"component": "PgVectorIndex", "params": {"url": url, "exact": exact, "shards": len(urls),
                                                                     "shard": i}}) for i, url in enumerate(urls)]
    return {"component": "ParallelRetriever", "params": {"children": children, "merge_strategy": "max_score",
                                                         "top_k": 10}}


@pytest.fixture(scope="module")
def whole_and_sharded(engine_subset, engine_cache, pg_url, pg_url_second, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    whole = dashrag.build(dense_tree({"component": "PgVectorIndex", "params": {"url": pg_url, "exact": True}}),
                          engine_subset.corpus, folder / "whole", cache_dir=engine_cache)
    sharded = dashrag.build(sharded_tree([pg_url, pg_url_second], exact=True), engine_subset.corpus,
                            folder / "sharded", cache_dir=engine_cache)
    yield whole, sharded
    whole.close()
    sharded.close()


def test_each_shard_holds_its_half_of_the_corpus(whole_and_sharded):
    _, sharded = whole_and_sharded
    counts = [child.index.count() for child in sharded.get_children()]
    assert sum(counts) == len(sharded.infra.chunks) and min(counts) > 0
    locations = {child.index.display_location() for child in sharded.get_children()}
    assert len(locations) == 2  # two servers, two ports


def test_two_shards_give_the_top_10_of_one_server(whole_and_sharded, engine_subset):
    whole, sharded = whole_and_sharded
    queries = list(engine_subset.queries.values())
    for (one, _), (two, _) in zip(whole.retrieve_batch(queries), sharded.retrieve_batch(queries)):
        assert [c.id for c in two] == [c.id for c in one]
        np.testing.assert_allclose([c.score for c in two], [c.score for c in one], atol=1e-6)


def test_two_bm25_shards_give_the_top_10_of_one_server(engine_subset, pg_url, pg_url_second, tmp_path):
    """Each shard stores its chunks' rows of the weights computed over the whole corpus, so the shards' sums
    are the global BM25 scores and their maximum fusion is the global top-10."""
    def keyword(url: str, shards: int = 1, shard: int = 0) -> dict:
        return {"component": "BM25Retriever", "params": {"top_k": 10, "index": {
            "component": "PgKeywordIndex", "params": {"url": url, "shards": shards, "shard": shard}}}}

    whole = dashrag.build(keyword(pg_url), engine_subset.corpus, tmp_path / "whole")
    sharded = dashrag.build({"component": "ParallelRetriever", "params": {
        "merge_strategy": "max_score", "top_k": 10,
        "children": [keyword(url, 2, i) for i, url in enumerate([pg_url, pg_url_second])]}},
        engine_subset.corpus, tmp_path / "sharded")
    try:
        queries = list(engine_subset.queries.values())
        for (one, _), (two, _) in zip(whole.retrieve_batch(queries), sharded.retrieve_batch(queries)):
            assert [c.id for c in two] == [c.id for c in one]
            np.testing.assert_allclose([c.score for c in two], [c.score for c in one], atol=1e-5)
    finally:
        whole.close()
        sharded.close()
