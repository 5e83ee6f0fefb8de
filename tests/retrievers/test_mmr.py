"""MMR: the pure selection rule, then the component over a dense child, a TF-IDF child and a hybrid."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.errors import ConfigError, UnknownChunkError
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
    np.testing.assert_allclose([p.score for p in picks], [0.95, 0.1, -0.075])  # first: 0.5·0.9 − 0.5·(−1)
    assert picks[0].max_similarity is None
    np.testing.assert_allclose([p.max_similarity for p in picks[1:]], [0.1, 0.95])
    np.testing.assert_allclose([p.relevance for p in picks], [0.9, 0.3, 0.8])


def random_case(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, 6))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = rng.normal(size=6)
    return vectors @ (query / np.linalg.norm(query)), vectors @ vectors.T


cases = st.tuples(st.integers(0, 10_000), st.integers(1, 25))


@settings(max_examples=100, deadline=None)
@given(cases, st.integers(0, 30))
def test_lambda_one_is_relevance_order(case, k):
    relevance, similarity = random_case(*case)
    expected = np.lexsort((np.arange(len(relevance)), -relevance))[:k]
    assert [p.index for p in mmr_select(relevance, similarity, 1.0, k)] == expected.tolist()


@settings(max_examples=100, deadline=None)
@given(cases)
def test_lambda_zero_always_picks_the_least_similar_candidate(case):
    relevance, similarity = random_case(*case)
    picks = mmr_select(relevance, similarity, 0.0, len(relevance))
    chosen = [picks[0].index]
    for pick in picks[1:]:
        remaining = [i for i in range(len(relevance)) if i not in chosen]
        least = min(remaining, key=lambda i: (similarity[i, chosen].max(), i))
        assert pick.index == least
        chosen.append(pick.index)


@settings(max_examples=100, deadline=None)
@given(cases, st.floats(0, 1), st.integers(0, 30))
def test_picks_are_distinct_bounded_and_never_increase(case, lambda_mult, k):
    relevance, similarity = random_case(*case)
    picks = mmr_select(relevance, similarity, lambda_mult, k)
    assert len(picks) == min(k, len(relevance)) == len({p.index for p in picks})
    scores = [p.score for p in picks]
    assert all(a >= b - 1e-12 for a, b in zip(scores, scores[1:]))


# -- the component --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def queries(subset) -> list[str]:
    return list(subset.queries.values())[:3]


@pytest.fixture(scope="module")
def over_dense(subset, shared_workdir):
    return dashrag.build(mmr_config(dense_config()), subset.corpus, shared_workdir)


@pytest.fixture(scope="module")
def over_tfidf(subset, shared_workdir):
    return dashrag.build(mmr_config(TFIDF), subset.corpus, shared_workdir)


@pytest.mark.slow
def test_lambda_one_keeps_the_dense_childs_order(subset, shared_workdir, queries):
    relevance_only = dashrag.build(mmr_config(dense_config(), lambda_mult=1.0), subset.corpus, shared_workdir)
    chunks, trace = relevance_only.retrieve(queries[0])
    child, _ = relevance_only.get_children()[0].retrieve(queries[0], top_k=5)
    assert [c.id for c in chunks] == [c.id for c in child]
    assert trace["selection"]["vectors"] == "the child's vectors"


@pytest.mark.slow
def test_lambda_zero_picks_the_candidate_least_like_the_first(subset, shared_workdir, queries):
    diverse = dashrag.build(mmr_config(dense_config(), lambda_mult=0.0), subset.corpus, shared_workdir)
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
    assert [c.provenance["relevance"] for c in chunks] == [o["relevance"] for o in order]


@pytest.mark.slow
def test_over_a_tfidf_child_it_embeds_the_candidates_itself(over_tfidf, queries):
    chunks, trace = over_tfidf.retrieve(queries[0])
    candidate_ids = {o["chunk_id"] for o in trace["children"][0]["output"]}
    assert len(chunks) == 5 and {c.id for c in chunks} <= candidate_ids
    assert trace["selection"]["vectors"] == "candidates embedded with this node's embedding"
    embedding = over_tfidf.nested["embedding"]
    query_vector = embedding.embed_queries([queries[0]])[0]
    texts = [c.chunk.text for c in chunks]
    expected = embedding.embed_documents(texts) @ query_vector
    np.testing.assert_allclose([c.provenance["relevance"] for c in chunks], expected, atol=1e-5)


@pytest.mark.slow
def test_over_a_hybrid_it_reuses_the_dense_descendants_vectors(subset, shared_workdir, queries):
    hybrid = {"component": "ParallelRetriever", "params": {"children": [TFIDF, dense_config()]}}
    root = dashrag.build(mmr_config(hybrid), subset.corpus, shared_workdir)
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
def test_score_chunks_follows_the_mmr_order_ascending(over_dense, queries):
    chunks, _ = over_dense.retrieve(queries[0])
    scored = over_dense.score_chunks([c.id for c in chunks], queries[0])
    distances = [d for _, d in scored]
    assert sorted(distances) == distances and {i for i, _ in scored} == {c.id for c in chunks}


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
    for query in queries[:2]:
        expected = [(c.id, c.score) for c in root.retrieve(query)[0]]
        assert [(c.id, c.score) for c in loaded.retrieve(query)[0]] == expected


def test_exactly_one_child_is_required():
    with pytest.raises(ConfigError, match="children"):
        dashrag.build_component({"component": "MMRRerankerRetriever", "params": {"children": [TFIDF, TFIDF]}})


def test_top_k_above_fetch_k_is_a_config_error():
    with pytest.raises(ConfigError, match="top_k"):
        dashrag.build_component(mmr_config(TFIDF, top_k=30, fetch_k=20))
