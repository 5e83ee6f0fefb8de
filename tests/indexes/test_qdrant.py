"""QdrantVectorIndex embedded on Qdrant Edge: exact search gives the in-process answers, HNSW and quantization
are really built and searched, references not copies, older local-mode trees still load, and every mismatch a
clear error naming Qdrant and the collection."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import dashrag
from dashrag.core.persistence import read_manifest
from dashrag.engines.local_postgres import free_port
from dashrag.errors import EngineError, PersistenceError
from tests.fixtures.qdrant import foreign_edge_collection
from tests.indexes.conftest import assert_answers_like_in_process, dense_tree, ndcg_at_10, ranked_ids

EXACT = {"component": "QdrantVectorIndex", "params": {"exact": True}}


@pytest.fixture(scope="module")
def qdrant_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("qdrant-tree")


@pytest.fixture(scope="module")
def on_qdrant(engine_subset, engine_cache, qdrant_folder):
    tree = dashrag.build(dense_tree(EXACT), engine_subset.corpus, qdrant_folder, cache_dir=engine_cache)
    tree.save(qdrant_folder)
    yield tree
    tree.close()


def test_exact_search_returns_the_in_process_ranking_and_scores(on_qdrant, in_process, engine_subset):
    assert_answers_like_in_process(on_qdrant, in_process, engine_subset)


def test_exact_search_gives_the_in_process_ndcg_to_four_decimals(on_qdrant, in_process, engine_subset):
    assert round(ndcg_at_10(on_qdrant, engine_subset), 4) == round(ndcg_at_10(in_process, engine_subset), 4)


def test_a_saved_tree_holds_a_reference_not_the_vectors(on_qdrant, qdrant_folder):
    files = read_manifest(qdrant_folder)["files"]
    assert not any(name.startswith("nodes/") and name.endswith(".npy") for name in files)  # the vectors: in Qdrant
    snapshot = qdrant_folder / read_manifest(qdrant_folder)["snapshot"]
    reference = json.loads((snapshot / "nodes/root/index.json").read_text())
    assert reference["engine"] == "Qdrant" and reference["collection"].startswith("dashrag_")
    assert reference["record"]["dimension"] == 384 and reference["record"]["count"] == len(on_qdrant.infra.chunks)


def test_a_loaded_tree_answers_like_the_built_one(on_qdrant, qdrant_folder, engine_subset):
    queries = list(engine_subset.queries.values())[:5]
    expected = ranked_ids(on_qdrant, queries)
    loaded = dashrag.load(qdrant_folder)
    try:
        assert ranked_ids(loaded, queries) == expected
    finally:
        loaded.close()


def test_vectors_for_reads_the_stored_vectors_back(on_qdrant, in_process):
    ids = [int(i) for i in in_process.require_infra().chunks.ids[:4]]
    np.testing.assert_allclose(on_qdrant.vectors_for(ids), in_process.vectors_for(ids), atol=1e-6)


def test_an_existing_foreign_collection_is_refused_and_left_untouched(engine_subset, engine_cache, tmp_path):
    from qdrant_edge import CountRequest, EdgeShard

    foreign_edge_collection(tmp_path / "qdrant", "theirs")
    config = dense_tree({"component": "QdrantVectorIndex", "params": {"collection": "theirs"}})
    with pytest.raises(EngineError, match=r"Qdrant collection 'theirs' .* not written by dashrag.*--overwrite"):
        dashrag.build(config, engine_subset.corpus, tmp_path, cache_dir=engine_cache).close()
    shard = EdgeShard.load(str(tmp_path / "qdrant" / "edge" / "theirs" / "shard"))
    assert shard.count(CountRequest(exact=True)) == 1
    shard.close()


def test_overwrite_replaces_a_foreign_edge_collection(engine_subset, engine_cache, tmp_path):
    foreign_edge_collection(tmp_path / "qdrant", "theirs")
    config = dense_tree({"component": "QdrantVectorIndex", "params": {"collection": "theirs", "exact": True}})
    tree = dashrag.build(config, engine_subset.corpus, tmp_path, cache_dir=engine_cache, overwrite=True)
    try:
        assert tree.index.count() == len(tree.infra.chunks) and tree.index.actual_dimension() == 384
    finally:
        tree.close()


def test_loading_refuses_a_collection_of_another_dimension(engine_subset, engine_cache, tmp_path):
    config = dense_tree({"component": "QdrantVectorIndex", "params": {"collection": "swapped"}})
    tree = dashrag.build(config, engine_subset.corpus, tmp_path, cache_dir=engine_cache)
    tree.save(tmp_path)
    tree.close()  # someone re-creates it with other vectors behind the tree's back
    shutil.rmtree(tmp_path / "qdrant" / "edge" / "swapped" / "shard")
    foreign_edge_collection(tmp_path / "qdrant", "swapped", size=8)
    with pytest.raises(EngineError, match=r"Qdrant collection 'swapped' .* 8-dimensional vectors.* gives 384"):
        dashrag.load(tmp_path)


def test_loading_refuses_a_dropped_collection(engine_subset, engine_cache, tmp_path):
    config = dense_tree({"component": "QdrantVectorIndex", "params": {"collection": "dropped"}})
    tree = dashrag.build(config, engine_subset.corpus, tmp_path, cache_dir=engine_cache)
    tree.save(tmp_path)
    tree.index.store.drop("dropped")
    tree.close()
    with pytest.raises(EngineError, match=r"Qdrant collection 'dropped' .* does not exist"):
        dashrag.load(tmp_path)


def test_a_damaged_shard_is_an_error_naming_qdrant_edge_and_the_collection(engine_subset, engine_cache, tmp_path):
    config = dense_tree({"component": "QdrantVectorIndex", "params": {"collection": "damaged"}})
    tree = dashrag.build(config, engine_subset.corpus, tmp_path, cache_dir=engine_cache)
    tree.save(tmp_path)
    tree.close()
    shutil.rmtree(tmp_path / "qdrant" / "edge" / "damaged" / "shard" / "segments")
    (tmp_path / "qdrant" / "edge" / "damaged" / "shard" / "segments").write_text("not a folder")
    # the load reads the collection's record and layout; its points are counted when a search first needs them
    # (an update, which never searches, does not open the shard: docs/scale.md "Dense updates on Qdrant Edge")
    loaded = dashrag.load(tmp_path)
    try:
        with pytest.raises(EngineError, match=r"Qdrant collection 'damaged' at embedded storage .*\(Qdrant Edge\): "
                                              r"counting points failed"):
            loaded.retrieve("cells")
    finally:
        loaded.close()


def test_an_in_memory_collection_cannot_be_saved(engine_subset, engine_cache, tmp_path):
    config = dense_tree({"component": "QdrantVectorIndex", "params": {"path": ":memory:"}})
    tree = dashrag.build(config, engine_subset.corpus, tmp_path, cache_dir=engine_cache)
    try:
        with pytest.raises(PersistenceError, match="in-memory collection cannot be saved"):
            tree.save(tmp_path / "saved")
    finally:
        tree.close()


def test_an_unreachable_server_is_an_error_naming_qdrant_and_the_collection(engine_subset, engine_cache, tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    config = dense_tree({"component": "QdrantVectorIndex", "params": {"url": url, "collection": "docs",
                                                                      "timeout_s": 2}})
    with pytest.raises(EngineError, match=rf"Qdrant collection 'docs' at {url}: .* failed"):
        dashrag.build(config, engine_subset.corpus, tmp_path, cache_dir=engine_cache)


def test_a_wrong_api_key_is_an_error_that_never_shows_the_key(engine_subset, engine_cache, tmp_path,
                                                              refusing_qdrant, monkeypatch):
    monkeypatch.setenv("DASHRAG_TEST_QDRANT_KEY", "s3cret-key-value")
    config = dense_tree({"component": "QdrantVectorIndex", "params": {
        "url": refusing_qdrant, "collection": "docs",
        "api_key": {"component": "EnvCredential", "params": {"var": "DASHRAG_TEST_QDRANT_KEY"}}}})
    with pytest.raises(EngineError, match=r"Qdrant collection 'docs' .* refused the API key") as caught:
        dashrag.build(config, engine_subset.corpus, tmp_path, cache_dir=engine_cache)
    assert "s3cret-key-value" not in str(caught.value)


HNSW = {"exact": False, "hnsw_threshold_kb": 1}  # the subset is ~300 KB: lowered so Edge builds and uses the graph


def built_on(config_params: dict, engine_subset, engine_cache, folder):
    return dashrag.build(dense_tree({"component": "QdrantVectorIndex", "params": config_params}),
                         engine_subset.corpus, folder, cache_dir=engine_cache)


def recall_at_10(found: list[list[int]], exact: list[list[int]]) -> float:
    return float(np.mean([len(set(a) & set(e)) / len(e) for a, e in zip(found, exact)]))


def test_hnsw_search_goes_through_a_built_graph_and_finds_the_exact_top_10(engine_subset, engine_cache,
                                                                          in_process, tmp_path):
    tree = built_on({**HNSW, "hnsw_m": 8, "hnsw_ef_construction": 64, "hnsw_ef": 64}, engine_subset, engine_cache,
                    tmp_path)
    try:
        assert tree.index.store.indexed_vectors(tree.index.name) == len(tree.infra.chunks)
        queries = list(engine_subset.queries.values())
        assert recall_at_10(ranked_ids(tree, queries), ranked_ids(in_process, queries)) >= 0.98
    finally:
        tree.close()


def test_an_exact_index_on_edge_builds_no_graph(engine_subset, engine_cache, tmp_path):
    tree = built_on({"exact": True, "hnsw_threshold_kb": 1}, engine_subset, engine_cache, tmp_path)
    try:
        assert tree.index.store.indexed_vectors(tree.index.name) == 0
        assert tree.index.structure() == {"hnsw_threshold_kb": 1, "graph": False}
    finally:
        tree.close()


@pytest.mark.parametrize("quantization", ["int8", "binary"])
def test_rescored_quantized_search_returns_the_original_vectors_scores(quantization, engine_subset, engine_cache,
                                                                       in_process, tmp_path):
    """Candidates come from the quantized vectors; rescoring gives each hit its exact cosine back."""
    tree = built_on({**HNSW, "quantization": quantization, "oversampling": 4.0}, engine_subset, engine_cache,
                    tmp_path)
    try:
        queries = list(engine_subset.queries.values())
        answers = tree.retrieve_batch(queries)
        for query, (chunks, _) in zip(queries, answers):
            ids = [c.id for c in chunks]
            expected = dict(in_process.score_chunks(ids, query))
            np.testing.assert_allclose([c.score for c in chunks], [1.0 - expected[i] for i in ids], atol=1e-5)
        found = [[c.id for c in chunks] for chunks, _ in answers]
        assert recall_at_10(found, ranked_ids(in_process, queries)) >= 0.9
    finally:
        tree.close()


def test_exact_search_on_a_quantized_collection_uses_the_original_vectors(engine_subset, engine_cache, in_process,
                                                                          tmp_path):
    tree = built_on({"exact": True, "quantization": "binary", "hnsw_threshold_kb": 1}, engine_subset, engine_cache,
                    tmp_path)
    try:
        assert_answers_like_in_process(tree, in_process, engine_subset)
    finally:
        tree.close()


def test_another_graph_or_quantization_is_another_collection(engine_subset, engine_cache, tmp_path):
    names = set()
    for params in ({}, {"hnsw_m": 32}, {"quantization": "int8"}, {"exact": True}):
        tree = built_on({"path": ":memory:", **params}, engine_subset, engine_cache, tmp_path / str(len(names)))
        names.add(tree.index.name)
        tree.close()
    assert len(names) == 4


def test_a_memory_collection_leaves_no_folder_behind(engine_subset, engine_cache, tmp_path):
    tree = built_on({"path": ":memory:", "exact": True}, engine_subset, engine_cache, tmp_path)
    folder = tree.index.store.root
    assert folder.is_dir()
    tree.close()
    assert not folder.exists()
