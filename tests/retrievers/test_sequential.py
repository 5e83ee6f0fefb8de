"""SequentialRetriever (a cascade) on a real SciFact subset: TF-IDF proposes, BM25 and TF-IDF re-score.

Expected answers are rebuilt stage by stage from the children's own ``retrieve`` and
``score_chunks``, never from the cascade's code.
"""

from __future__ import annotations

import pytest

import dashrag
from dashrag.errors import ConfigError, UnknownChunkError

QUERIES = ["vitamin D deficiency and fractures", "tumour suppressor p53 mutation in cancer cells",
           "cerebral white matter diffusion in newborns"]


def tfidf(top_k: int, **params) -> dict:
    return {"component": "TFIDFRetriever", "params": {"top_k": top_k, **params}}


def bm25(top_k: int) -> dict:
    return {"component": "BM25Retriever", "params": {"top_k": top_k}}


def cascade(*children: dict) -> dict:
    return {"component": "SequentialRetriever", "params": {"children": list(children)}}


THREE_STAGES = cascade(tfidf(20), bm25(10), tfidf(5, sublinear_tf=True))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("sequential")


@pytest.fixture(scope="module")
def three(scifact_subset_file, workdir):
    return dashrag.build(THREE_STAGES, scifact_subset_file, workdir)


@pytest.fixture(scope="module")
def two(scifact_subset_file, workdir):
    return dashrag.build(cascade(tfidf(20), bm25(6)), scifact_subset_file, workdir)


def by_hand(root, query: str, **kwargs) -> list[list[tuple[int, float]]]:
    """Each stage's survivors as (chunk id, distance): stage 0 from retrieve, the rest from score_chunks."""
    first, *later = root.get_children()
    proposed, _ = first.retrieve(query, **kwargs)
    stages = [[(c.id, -c.score) for c in proposed]]
    for stage in later:
        stages.append(stage.score_chunks([cid for cid, _ in stages[-1]], query)[: stage.params.top_k])
    return stages


def test_builds_from_json_and_gives_back_its_config(three):
    config = three.to_config()
    assert [(c["component"], c["params"]["top_k"]) for c in config["params"]["children"]] == [
        ("TFIDFRetriever", 20), ("BM25Retriever", 10), ("TFIDFRetriever", 5)]
    assert config == dashrag.validate_and_transform(THREE_STAGES)
    assert dashrag.build_component(config).to_config() == config


def test_a_growing_top_k_is_a_config_error_with_its_path():
    with pytest.raises(ConfigError) as info:
        dashrag.validate_and_transform(cascade(tfidf(5), bm25(10)))
    assert [str(i) for i in info.value.issues] == [
        "params.children: children[1].params.top_k (10) is not smaller than children[0].params.top_k (5): "
        "each stage of a cascade narrows"]


def test_a_default_top_k_that_grows_is_caught_too():
    """BM25's default top_k is 5: left out, it still may not exceed the 3 before it."""
    grows = r"children\[1\]\.params\.top_k \(5\) is not smaller than children\[0\]\.params\.top_k \(3\)"
    with pytest.raises(ConfigError, match=grows):
        dashrag.build_component(cascade(tfidf(3), {"component": "BM25Retriever"}))


def test_a_growing_top_k_in_a_nested_cascade_names_the_nested_path():
    outer = {"component": "ParallelRetriever", "params": {"children": [cascade(tfidf(4), bm25(8)), tfidf(5)]}}
    with pytest.raises(ConfigError) as info:
        dashrag.build_component(outer)
    assert [i.path for i in info.value.issues] == ["params.children[0].params.children"]
    assert "children[1].params.top_k (8) is not smaller than children[0].params.top_k (4)" in str(info.value)


def test_equal_top_k_is_a_config_error_as_in_dashai():
    with pytest.raises(ConfigError, match=r"children\[1\]\.params\.top_k \(5\) is not smaller than "
                                          r"children\[0\]\.params\.top_k \(5\)"):
        dashrag.build_component(cascade(tfidf(5), bm25(5)))


def test_output_is_the_second_stages_best_of_the_first_stages_candidates(two):
    for query in QUERIES:
        stages = by_hand(two, query)
        assert len(stages[0]) == 20
        chunks, _ = two.retrieve(query)
        assert [c.id for c in chunks] == [cid for cid, _ in stages[1]]
        assert len(chunks) == 6


def test_scores_are_negated_last_stage_distances(three):
    stages = by_hand(three, QUERIES[0])
    chunks, _ = three.retrieve(QUERIES[0])
    assert [(c.id, c.score) for c in chunks] == [(cid, -d) for cid, d in stages[-1]]
    assert all(c.source == "TFIDFRetriever" for c in chunks)


def test_provenance_keeps_every_rescoring_stages_distance(three):
    stages = by_hand(three, QUERIES[1])
    chunks, _ = three.retrieve(QUERIES[1])
    stage0, stage1, stage2 = dict(stages[0]), dict(stages[1]), dict(stages[2])
    for chunk in chunks:
        assert chunk.provenance == {"stage0_distance": stage0[chunk.id], "stage1_distance": stage1[chunk.id],
                                    "stage2_distance": stage2[chunk.id]}


def test_trace_holds_each_stages_node_and_the_stage_sizes(three):
    stages = by_hand(three, QUERIES[0])
    chunks, trace = three.retrieve(QUERIES[0])
    assert [n["component"] for n in trace["children"]] == ["TFIDFRetriever", "BM25Retriever", "TFIDFRetriever"]
    assert [[o["chunk_id"] for o in n["output"]] for n in trace["children"]] == [[cid for cid, _ in s] for s in stages]
    assert [n.get("rescored") for n in trace["children"]] == [None, True, True]
    assert trace["selection"]["stage_sizes"] == [20, 10, 5]
    assert trace["selection"]["summary"] == "20 → 10 → 5"
    assert [o["chunk_id"] for o in trace["output"]] == [c.id for c in chunks]


def test_top_k_hint_cuts_the_output_but_not_the_first_stage(three):
    full, _ = three.retrieve(QUERIES[2])
    chunks, trace = three.retrieve(QUERIES[2], top_k=2)
    assert chunks == full[:2]
    assert trace["selection"]["stage_sizes"] == [20, 10, 5]


def test_restriction_passes_down_and_excludes_documents(three):
    proposed = three.get_children()[0].retrieve(QUERIES[0], top_k=80)[0]
    seen = {c.document_id for c in proposed[:20]}  # the documents the unrestricted first stage proposes
    allowed = {c.document_id for c in proposed[20:]} - seen
    assert not allowed & {c.document_id for c in three.retrieve(QUERIES[0])[0]}
    restriction = dashrag.Restriction.to_documents(allowed)
    chunks, trace = three.retrieve(QUERIES[0], restriction=restriction)
    assert len(chunks) == 5 and {c.document_id for c in chunks} <= allowed
    assert [c.id for c in chunks] == [cid for cid, _ in by_hand(three, QUERIES[0], restriction=restriction)[-1]]
    assert trace["selection"]["stage_sizes"] == [20, 10, 5]


def test_score_chunks_is_the_last_stages(three):
    chunks, _ = three.get_children()[0].retrieve(QUERIES[1])
    ids = [c.id for c in chunks]
    scored = three.score_chunks(ids, QUERIES[1])
    assert scored == three.get_children()[-1].score_chunks(ids, QUERIES[1])
    assert [d for _, d in scored] == sorted(d for _, d in scored)


def test_score_chunks_refuses_unknown_ids(three):
    with pytest.raises(UnknownChunkError):
        three.score_chunks([10**9], QUERIES[0])


def test_batch_equals_one_query_at_a_time(three):
    for query, (chunks, trace) in zip(QUERIES, three.retrieve_batch(QUERIES)):
        assert chunks == three.retrieve(query)[0]
        assert trace["selection"]["stage_sizes"] == [20, 10, 5]


def test_save_and_load_answer_identically(three, tmp_path):
    loaded = dashrag.load(three.save(tmp_path / "saved"))
    assert loaded.to_config() == three.to_config()
    for query in QUERIES:
        assert loaded.retrieve(query)[0] == three.retrieve(query)[0]


def test_a_later_stage_without_top_k_keeps_every_candidate(scifact_subset_file, tmp_path):
    # a nested cascade has no top_k of its own: as a later stage it re-orders, it does not cut
    nested = dashrag.build(cascade(tfidf(20), cascade(bm25(10), tfidf(5))), scifact_subset_file, tmp_path)
    first, inner = nested.get_children()
    proposed = [c.id for c in first.retrieve(QUERIES[0])[0]]
    chunks, _ = nested.retrieve(QUERIES[0])
    assert [c.id for c in chunks] == [cid for cid, _ in inner.score_chunks(proposed, QUERIES[0])]
    assert len(chunks) == 20
