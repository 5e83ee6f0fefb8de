"""MMR: the pure selection rule, then the component over a dense child, a TF-IDF child and a hybrid."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.errors import ConfigError, RetrievalError, UnknownChunkError
from dashrag.retrievers.mmr import mmr_select
from tests.fixtures.scifact import FAST_MINILM, dense_config

TFIDF = {"component": "TFIDFRetriever", "params": {}}


def mmr_config(child: dict, lambda_mult: float = 0.5, top_k: int = 5, fetch_k: int = 10) -> dict:
    return {"component": "MMRRerankerRetriever", "params": {
        "children": [child], "lambda_mult": lambda_mult, "top_k": top_k, "fetch_k": fetch_k, "embedding": FAST_MINILM}}


# -- the pure rule --------------------------------------------------------------------------
def test_mmr_select_by_hand():
    relevance = np.array([0.9, 0.8, 0.3])
    similarity = np.array([[1, 0.95, 0.1], [0.95, 1, 0.2], [0.1, 0.2, 1]])
    picks = mmr_select(relevance, similarity, 0.5, 3)
    assert [p.index for p in picks] == [0, 2, 1]
    np.testing.assert_allclose([p.score for p in picks], [0.45, 0.1, -0.075])  # first: 0.5·0.9, nothing picked yet
    assert picks[0].max_similarity is None
    np.testing.assert_allclose([p.max_similarity for p in picks[1:]], [0.1, 0.95])
    np.testing.assert_allclose([p.relevance for p in picks], [0.9, 0.3, 0.8])


def random_case(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, 6))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return rng.normal(size=n), vectors @ vectors.T  # relevance: any scores, not cosines to a query


cases = st.tuples(st.integers(0, 10_000), st.integers(1, 25))


@settings(max_examples=100, deadline=None)
@given(cases)
def test_lambda_zero_picks_the_most_relevant_first_then_the_least_similar(case):
    relevance, similarity = random_case(*case)
    picks = mmr_select(relevance, similarity, 0.0, len(relevance))
    assert picks[0].index == int(np.argmax(relevance))
    chosen = [picks[0].index]
    for pick in picks[1:]:
        remaining = [i for i in range(len(relevance)) if i not in chosen]
        least = min(remaining, key=lambda i: (similarity[i, chosen].max(), i))
        assert pick.index == least
        chosen.append(pick.index)


@settings(max_examples=100, deadline=None)
@given(cases, st.floats(0, 1), st.integers(0, 30))
def test_the_first_pick_is_the_most_relevant_whatever_lambda(case, lambda_mult, k):
    relevance, similarity = random_case(*case)
    picks = mmr_select(relevance, similarity, lambda_mult, max(k, 1))
    assert picks[0].index == int(np.argmax(relevance))


@settings(max_examples=100, deadline=None)
@given(cases, st.floats(0, 1), st.integers(0, 30))
def test_picks_are_distinct_and_bounded(case, lambda_mult, k):
    relevance, similarity = random_case(*case)
    picks = mmr_select(relevance, similarity, lambda_mult, k)
    assert len(picks) == min(k, len(relevance)) == len({p.index for p in picks})


@pytest.mark.parametrize("relevance, similarity", [
    (np.zeros(3), np.zeros((2, 2))), (np.zeros(3), np.zeros((3, 2))), (np.zeros((3, 1)), np.zeros((3, 3)))])
def test_mmr_select_with_mismatched_shapes_raises_the_projects_error(relevance, similarity):
    with pytest.raises(RetrievalError, match="mmr_select: relevance must be"):
        mmr_select(relevance, similarity, 0.5, 2)


def test_mmr_select_refuses_a_lambda_outside_zero_to_one():
    with pytest.raises(RetrievalError, match="lambda_mult"):
        mmr_select(np.zeros(2), np.zeros((2, 2)), 1.5, 2)


# -- the component --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def queries(subset) -> list[str]:
    return list(subset.queries.values())[:3]


@pytest.fixture(scope="module")
def over_dense(subset, shared_workdir, run_cache):
    return dashrag.build(mmr_config(dense_config()), subset.corpus, shared_workdir, cache_dir=run_cache)


@pytest.fixture(scope="module")
def over_tfidf(subset, shared_workdir, run_cache):
    return dashrag.build(mmr_config(TFIDF), subset.corpus, shared_workdir, cache_dir=run_cache)


@pytest.mark.slow
def test_lambda_one_keeps_the_dense_childs_order(subset, shared_workdir, run_cache, queries):
    relevance_only = dashrag.build(mmr_config(dense_config(), lambda_mult=1.0), subset.corpus, shared_workdir,
                                   cache_dir=run_cache)
    chunks, trace = relevance_only.retrieve(queries[0])
    child, _ = relevance_only.get_children()[0].retrieve(queries[0], top_k=5)
    assert [c.id for c in chunks] == [c.id for c in child]
    assert trace["selection"]["vectors"] == "the child's vectors"


@pytest.mark.slow
def test_lambda_zero_picks_the_candidate_least_like_the_first(subset, shared_workdir, run_cache, queries):
    diverse = dashrag.build(mmr_config(dense_config(), lambda_mult=0.0), subset.corpus, shared_workdir,
                            cache_dir=run_cache)
    chunks, _ = diverse.retrieve(queries[0])
    child = diverse.get_children()[0]
    candidates, _ = child.retrieve(queries[0], top_k=10)
    vectors = child.vectors_for([c.id for c in candidates])
    first = [c.id for c in candidates].index(chunks[0].id)
    similarity_to_first = vectors @ vectors[first]
    similarity_to_first[first] = np.inf
    assert chunks[1].id == candidates[int(np.argmin(similarity_to_first))].id


@pytest.mark.slow
def test_trace_holds_the_child_node_and_the_selection(over_dense, queries):
    chunks, trace = over_dense.retrieve(queries[0])
    assert [child["component"] for child in trace["children"]] == ["DenseEmbeddingRetriever"]
    assert len(trace["children"][0]["output"]) == 10  # fetch_k candidates asked of the child
    order = trace["selection"]["order"]
    assert [o["chunk_id"] for o in order] == [c.id for c in chunks]
    assert order[0]["max_similarity"] is None and all(isinstance(o["max_similarity"], float) for o in order[1:])
    assert [c.provenance["mmr_relevance"] for c in chunks] == [o["relevance"] for o in order]


@pytest.mark.slow
def test_mmr_reorders_but_keeps_the_childs_scores_and_puts_its_value_in_the_provenance(over_dense, queries):
    chunks, trace = over_dense.retrieve(queries[0])
    child_scores = {o["chunk_id"]: o["score"] for o in trace["children"][0]["output"]}
    assert [c.score for c in chunks] == [child_scores[c.id] for c in chunks]
    assert [c.provenance["mmr_score"] for c in chunks] == [o["mmr"] for o in trace["selection"]["order"]]


@pytest.mark.slow
def test_mmr_relevance_is_the_childs_score_never_a_recomputed_cosine(over_tfidf, queries):
    chunks, trace = over_tfidf.retrieve(queries[0])
    child_scores = {o["chunk_id"]: o["score"] for o in trace["children"][0]["output"]}
    assert [c.provenance["mmr_relevance"] for c in chunks] == [child_scores[c.id] for c in chunks]


def test_mmr_does_not_run_when_the_candidates_fit_top_k(tmp_path):
    from tests.conftest import EXAMPLE_CORPUS

    root = dashrag.build(mmr_config(TFIDF, top_k=1, fetch_k=1), dashrag.Corpus.from_folder(EXAMPLE_CORPUS), tmp_path)
    chunks, trace = root.retrieve("dense vectors")
    child, _ = root.get_children()[0].retrieve("dense vectors", top_k=1)
    assert (chunks, trace["selection"]["ran"]) == (child, False)
    assert root.nested["embedding"].documents_embedded == 0


@pytest.mark.slow
def test_over_a_tfidf_child_it_embeds_the_candidates_itself(over_tfidf, queries):
    chunks, trace = over_tfidf.retrieve(queries[0])
    candidate_ids = {o["chunk_id"] for o in trace["children"][0]["output"]}
    assert len(chunks) == 5 and {c.id for c in chunks} <= candidate_ids
    assert trace["selection"]["vectors"] == "candidates embedded with this node's embedding"


@pytest.mark.slow
def test_over_a_hybrid_it_reuses_the_dense_descendants_vectors(subset, shared_workdir, run_cache, queries):
    hybrid = {"component": "ParallelRetriever", "params": {"children": [TFIDF, dense_config()]}}
    root = dashrag.build(mmr_config(hybrid), subset.corpus, shared_workdir, cache_dir=run_cache)
    chunks, trace = root.retrieve(queries[0])
    assert len(chunks) == 5
    assert trace["selection"]["vectors"] == "vectors of children[0].children[1] (same embedding)"
    assert root.nested["embedding"].documents_embedded == 0


@pytest.mark.slow
def test_restriction_reaches_the_child(over_dense, queries):
    chunks, _ = over_dense.retrieve(queries[0])
    keep = {chunks[-1].document_id}
    restricted, _ = over_dense.retrieve(queries[0], restriction=dashrag.Restriction.to_documents(keep))
    assert restricted and {c.document_id for c in restricted} == keep


@pytest.mark.slow
def test_score_chunks_is_the_childs_as_in_the_reference(over_dense, queries):
    chunks, _ = over_dense.retrieve(queries[0])
    ids = [c.id for c in chunks]
    assert over_dense.score_chunks(ids, queries[0]) == over_dense.get_children()[0].score_chunks(ids, queries[0])


@pytest.mark.slow
def test_score_chunks_refuses_unknown_ids(over_tfidf, queries):
    with pytest.raises(UnknownChunkError):
        over_tfidf.score_chunks([123456789], queries[0])


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["over_dense", "over_tfidf"])
def test_save_and_load_answer_identically(request, fixture, queries, tmp_path):
    root = request.getfixturevalue(fixture)
    root.save(tmp_path / "saved")
    loaded = dashrag.load(tmp_path / "saved")
    for query in queries[:2]:  # a loaded dense child embeds queries with its ONNX export: scores to float32 rounding
        expected, got = root.retrieve(query)[0], loaded.retrieve(query)[0]
        assert [c.id for c in got] == [c.id for c in expected]
        assert [c.score for c in got] == pytest.approx([c.score for c in expected], abs=1e-5)


def test_exactly_one_child_is_required():
    with pytest.raises(ConfigError, match="children"):
        dashrag.build_component({"component": "MMRRerankerRetriever", "params": {"children": [TFIDF, TFIDF]}})


def test_top_k_above_fetch_k_is_a_config_error():
    with pytest.raises(ConfigError, match="top_k"):
        dashrag.build_component(mmr_config(TFIDF, top_k=30, fetch_k=20))


def test_without_fetch_k_the_child_proposes_as_many_as_its_own_top_k(tmp_path):
    from tests.conftest import EXAMPLE_CORPUS

    child = {"component": "TFIDFRetriever", "params": {"top_k": 7}}
    root = dashrag.build({"component": "MMRRerankerRetriever", "params": {
        "children": [child], "mmr_lambda": 0.5, "top_k": 3, "embedding": FAST_MINILM}},
        dashrag.Corpus.from_folder(EXAMPLE_CORPUS), tmp_path)
    chunks, trace = root.retrieve("dense vectors keyword search", top_k=3)
    own, _ = root.get_children()[0].retrieve("dense vectors keyword search")  # the child's own top_k, 7
    assert [o["chunk_id"] for o in trace["children"][0]["output"]] == [c.id for c in own] and len(own) > 3
    assert (len(chunks), trace["selection"]["ran"]) == (3, True)
    assert root.params.lambda_mult == 0.5 and "mmr_lambda" not in root.to_config()["params"]


@settings(max_examples=100, deadline=None)
@given(cases, st.integers(1, 30))
def test_mmr_select_with_lambda_1_returns_relevance_order_even_for_unsorted_input(case, k):
    """rag-reranker: λ = 1 is relevance only, whatever order the candidates come in (ties: input order)."""
    relevance, similarity = random_case(*case)
    picks = mmr_select(relevance, similarity, 1.0, k)
    assert [p.index for p in picks] == sorted(range(len(relevance)), key=lambda i: (-relevance[i], i))[:k]
