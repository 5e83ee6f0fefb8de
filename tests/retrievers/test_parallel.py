"""ParallelRetriever on a real SciFact subset with BM25 and TF-IDF children.

Every expectation is computed from the children's own answers with
:func:`dashrag.fusion.fuse` or by hand; the fusion algebra itself is tested in tests/fusion.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import dashrag
from dashrag.api import prepare_corpus
from dashrag.errors import ConfigError, RetrievalError, UnknownChunkError
from dashrag.fusion import STRATEGY_NAMES, fuse

QUERIES = ["vitamin D deficiency and fractures", "tumour suppressor p53 mutation in cancer cells",
           "cerebral white matter diffusion in newborns"]
BM25 = {"component": "BM25Retriever", "params": {"top_k": 10}}
TFIDF = {"component": "TFIDFRetriever", "params": {"top_k": 10}}


def parallel(**params) -> dict:
    return {"component": "ParallelRetriever", "params": {"children": [BM25, TFIDF], **params}}


RRF = parallel(merge_strategy="rrf", weights=[2.0, 1.0], rrf_k=10)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("parallel")


@pytest.fixture(scope="module")
def build(scifact_subset_file, workdir):
    built = []

    def make(config: dict):
        root = dashrag.build(config, scifact_subset_file, workdir)
        built.append(root)
        return root

    yield make
    for root in built:
        root.close()


@pytest.fixture(scope="module")
def rrf(build):
    return build(RRF)


def pool_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("dashrag-parallel")}


def children_answers(root, query: str, **kwargs) -> list[list]:
    return [child.retrieve(query, **kwargs)[0] for child in root.get_children()]


def test_builds_from_json_and_gives_back_its_config(rrf):
    config = rrf.to_config()
    assert [c["component"] for c in config["params"]["children"]] == ["BM25Retriever", "TFIDFRetriever"]
    assert {k: config["params"][k] for k in ("merge_strategy", "weights", "rrf_k", "top_k", "concurrent")} == {
        "merge_strategy": "rrf", "weights": [2.0, 1.0], "rrf_k": 10.0, "top_k": None, "concurrent": True}
    assert config == dashrag.validate_and_transform(RRF)
    assert dashrag.build_component(config).to_config() == config


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_result_is_fuse_of_the_childrens_own_answers(build, strategy):
    root = build(parallel(merge_strategy=strategy, weights=[2.0, 1.0], rrf_k=10))
    for query in QUERIES:
        lists = children_answers(root, query)
        expected = fuse(lists, strategy, [2.0, 1.0], k=10, source="ParallelRetriever")
        assert root.retrieve(query)[0] == expected


def test_rrf_scores_match_the_formula_by_hand(rrf):
    lists = children_answers(rrf, QUERIES[0])
    by_hand: dict[int, float] = {}
    for weight, ranking in zip([2.0, 1.0], lists):
        for rank, chunk in enumerate(ranking, start=1):
            by_hand[chunk.id] = by_hand.get(chunk.id, 0.0) + weight / (10 + rank)
    chunks, _ = rrf.retrieve(QUERIES[0])
    assert {c.id for c in chunks} == set(by_hand)
    np.testing.assert_allclose([c.score for c in chunks], [by_hand[c.id] for c in chunks], rtol=1e-12)
    assert [c.score for c in chunks] == sorted((c.score for c in chunks), reverse=True)


def test_concurrent_and_serial_give_identical_results(rrf, build):
    serial = build({**RRF, "params": {**RRF["params"], "concurrent": False}})
    for query in QUERIES:
        assert serial.retrieve(query)[0] == rrf.retrieve(query)[0]
    assert [c for c, _ in serial.retrieve_batch(QUERIES)] == [c for c, _ in rrf.retrieve_batch(QUERIES)]


def test_serial_mode_starts_no_thread(build):
    serial = build({**RRF, "params": {**RRF["params"], "concurrent": False}})
    before = pool_threads()
    serial.retrieve(QUERIES[0])
    assert pool_threads() - before == set()


def test_provenance_lists_each_childs_rank_and_raw_score(rrf):
    lists = children_answers(rrf, QUERIES[1])
    chunks, _ = rrf.retrieve(QUERIES[1])
    merged_somewhere = False
    for chunk in chunks:
        expected = {str(i): (rank, hit.score) for i, ranking in enumerate(lists)
                    for rank, hit in enumerate(ranking, start=1) if hit.id == chunk.id}
        found = {i: (h["rank"], h["score"]) for i, h in chunk.provenance["children"].items()}
        assert found == expected
        assert chunk.provenance["fusion"] == "rrf" and chunk.provenance["fused_score"] == chunk.score
        assert chunk.source == "ParallelRetriever"
        merged_somewhere |= len(found) == 2
    assert merged_somewhere  # the check above covered a chunk both children returned


def test_trace_has_one_node_per_child_and_a_selection_summary(rrf):
    lists = children_answers(rrf, QUERIES[0])
    chunks, trace = rrf.retrieve(QUERIES[0])
    assert [n["component"] for n in trace["children"]] == ["BM25Retriever", "TFIDFRetriever"]
    assert [[o["chunk_id"] for o in n["output"]] for n in trace["children"]] == [[c.id for c in x] for x in lists]
    received = sum(len(x) for x in lists)
    duplicates = received - len({c.id for x in lists for c in x})
    assert duplicates > 0
    selection = trace["selection"]
    assert (selection["strategy"], selection["weights"]) == ("rrf", [2.0, 1.0])
    assert (selection["received"], selection["duplicates_merged"], selection["returned"]) == (
        received, duplicates, len(chunks))
    assert selection["summary"] == f"rrf: {received} in, {duplicates} duplicates merged, {len(chunks)} out"
    assert [o["chunk_id"] for o in trace["output"]] == [c.id for c in chunks]


def test_weights_of_the_wrong_length_are_a_config_error_with_its_path():
    with pytest.raises(ConfigError) as info:
        dashrag.validate_and_transform(parallel(weights=[1.0]))
    assert [str(i) for i in info.value.issues] == ["params.weights: weights has 1 entries but there are 2 children"]


def test_wrong_weights_of_a_nested_parallel_name_the_nested_path():
    outer = {"component": "ParallelRetriever", "params": {"children": [parallel(weights=[1.0, 1.0, 1.0]), TFIDF]}}
    with pytest.raises(ConfigError) as info:
        dashrag.build_component(outer)
    assert [str(i) for i in info.value.issues] == [
        "params.children[0].params.weights: weights has 3 entries but there are 2 children"]


def test_a_negative_weight_is_a_config_error_on_the_weights_field():
    with pytest.raises(ConfigError) as info:
        dashrag.validate_and_transform(parallel(weights=[1.0, -1.0]))
    assert [i.path for i in info.value.issues] == ["params.weights"]
    assert "must be >= 0" in str(info.value)


def test_top_k_param_cuts_the_fused_list(rrf, build):
    cut = build({**RRF, "params": {**RRF["params"], "top_k": 4}})
    for query in QUERIES:
        full, _ = rrf.retrieve(query)
        assert len(full) > 4
        assert cut.retrieve(query)[0] == full[:4]


def test_top_k_hint_goes_to_the_children_and_cuts_the_fused_list(rrf):
    lists = children_answers(rrf, QUERIES[2], top_k=3)
    assert [len(x) for x in lists] == [3, 3]
    chunks, _ = rrf.retrieve(QUERIES[2], top_k=3)
    assert chunks == fuse(lists, "rrf", [2.0, 1.0], k=10, source="ParallelRetriever", top_k=3)


def test_restriction_reaches_every_child(rrf):
    full, _ = rrf.retrieve(QUERIES[0])
    allowed = {c.document_id for c in full[len(full) // 2:]}
    restriction = dashrag.Restriction.to_documents(allowed)
    chunks, _ = rrf.retrieve(QUERIES[0], restriction=restriction)
    assert chunks and {c.document_id for c in chunks} <= allowed
    assert chunks == fuse(children_answers(rrf, QUERIES[0], restriction=restriction), "rrf", [2.0, 1.0], k=10,
                          source="ParallelRetriever")


def test_batch_equals_one_query_at_a_time(rrf):
    batched = rrf.retrieve_batch(QUERIES)
    assert len(batched) == len(QUERIES)
    for query, (chunks, trace) in zip(QUERIES, batched):
        assert chunks == rrf.retrieve(query)[0]
        assert trace["query"] == query and len(trace["children"]) == 2


def test_score_chunks_is_the_weighted_mean_of_the_childrens_distances(rrf):
    """DashAI's score_chunks: each chunk's distance averaged over the children (here weighted 2:1), ascending."""
    chunks, _ = rrf.retrieve(QUERIES[0])
    ids = sorted(c.id for c in chunks)
    per_child = [dict(child.score_chunks(ids, QUERIES[0])) for child in rrf.get_children()]
    scored = rrf.score_chunks(ids, QUERIES[0])
    distances = [d for _, d in scored]
    assert distances == sorted(distances)
    assert sorted(cid for cid, _ in scored) == ids
    expected = [(2.0 * per_child[0][cid] + per_child[1][cid]) / 3.0 for cid, _ in scored]
    np.testing.assert_allclose(distances, expected, rtol=1e-12)


def test_score_chunks_refuses_unknown_ids(rrf):
    with pytest.raises(UnknownChunkError):
        rrf.score_chunks([10**9], QUERIES[0])


@pytest.mark.parametrize("concurrent", [True, False])
def test_a_failing_child_raises_its_error(scifact_subset_file, tmp_path, concurrent):
    """Only the TF-IDF child gets a corpus; the BM25 child (the one sent to the pool) must fail loudly."""
    tree = dashrag.build_component(parallel(concurrent=concurrent))
    tfidf = tree.get_children()[1]
    tfidf.inject_infra(prepare_corpus(scifact_subset_file, tmp_path))
    tfidf.init_model()
    try:
        with pytest.raises(RetrievalError, match="BM25Retriever: no corpus injected"):
            tree.retrieve(QUERIES[0])
    finally:
        tree.close()


def test_save_and_load_answer_identically(rrf, tmp_path):
    loaded = dashrag.load(rrf.save(tmp_path / "saved"))
    try:
        assert loaded.to_config() == rrf.to_config()
        for query in QUERIES:
            assert loaded.retrieve(query)[0] == rrf.retrieve(query)[0]
    finally:
        loaded.close()


def test_close_stops_the_pool_threads_and_a_later_query_still_answers(build):
    root = build(RRF)
    before = pool_threads()
    answer, _ = root.retrieve(QUERIES[0])
    started = pool_threads() - before
    assert len(started) == 1  # two children: one goes to the pool, the caller runs the other
    root.close()
    assert not any(t.is_alive() for t in started)
    assert root.retrieve(QUERIES[0])[0] == answer
