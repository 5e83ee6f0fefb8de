"""CrossEncoderRetriever plumbing with MODELS.md's offline cross-encoder (random head: no quality claims)."""

from __future__ import annotations

import numpy as np
import pytest

import dashrag
from dashrag.errors import ConfigError, UnknownChunkError
from dashrag.retrievers.cross_encoder import DEFAULT_CROSS_ENCODER
from tests.fixtures.scifact import dense_config

FETCH_K = 8

pytestmark = pytest.mark.slow  # loads a real model


def ce_config(model: str, batch_size: int = 32, top_k: int = 5) -> dict:
    return {"component": "CrossEncoderRetriever", "params": {
        "children": [dense_config()], "model": model, "batch_size": batch_size, "max_length": 128,
        "top_k": top_k, "fetch_k": FETCH_K}}


@pytest.fixture(scope="module")
def reranker(cross_encoder_dir, subset, shared_workdir, run_cache):
    return dashrag.build(ce_config(str(cross_encoder_dir)), subset.corpus, shared_workdir, cache_dir=run_cache)


@pytest.fixture(scope="module")
def queries(subset) -> list[str]:
    return list(subset.queries.values())[:3]


@pytest.fixture(scope="module")
def independent_model(cross_encoder_dir):
    """The same folder loaded by the library directly, not through dashrag."""
    from sentence_transformers import CrossEncoder

    return CrossEncoder(str(cross_encoder_dir), device="cpu", max_length=128)


def test_results_are_the_candidates_ordered_by_the_models_scores(reranker, independent_model, queries):
    chunks, trace = reranker.retrieve(queries[0])
    candidates, _ = reranker.get_children()[0].retrieve(queries[0], top_k=FETCH_K)
    scores = independent_model.predict([(queries[0], c.chunk.text) for c in candidates])
    order = np.lexsort((np.arange(len(scores)), -scores))[:5]
    assert [c.id for c in chunks] == [candidates[i].id for i in order]
    np.testing.assert_allclose([c.score for c in chunks], scores[order], atol=1e-5)


def test_batch_size_does_not_change_scores(cross_encoder_dir, subset, shared_workdir, run_cache, reranker, queries):
    one_by_one = dashrag.build(ce_config(str(cross_encoder_dir), batch_size=1), subset.corpus, shared_workdir,
                               cache_dir=run_cache)
    a, _ = reranker.retrieve(queries[0])
    b, _ = one_by_one.retrieve(queries[0])
    assert [c.id for c in a] == [c.id for c in b]
    np.testing.assert_allclose([c.score for c in a], [c.score for c in b], atol=1e-5)


def test_a_batch_of_queries_answers_like_single_queries(reranker, queries):
    for query, (batched, _) in zip(queries, reranker.retrieve_batch(queries)):
        single, _ = reranker.retrieve(query)
        assert [c.id for c in single] == [c.id for c in batched]
        np.testing.assert_allclose([c.score for c in single], [c.score for c in batched], atol=1e-5)


def test_trace_holds_the_child_and_each_move(reranker, queries):
    chunks, trace = reranker.retrieve(queries[0])
    assert [child["component"] for child in trace["children"]] == ["DenseEmbeddingRetriever"]
    assert len(trace["children"][0]["output"]) == FETCH_K
    moves = trace["selection"]["moves"]
    assert [m["chunk_id"] for m in moves] == [c.id for c in chunks]
    assert [m["child_rank"] for m in moves] == [c.provenance["child_rank"] for c in chunks]


def test_score_chunks_is_one_minus_the_sigmoid_of_the_model_score_ascending(reranker, independent_model, queries):
    """DashAI's distance for a cross-encoder: 1 - sigmoid(logit) (docs/reference_differences.md)."""
    chunks, _ = reranker.retrieve(queries[0])
    scored = reranker.score_chunks([c.id for c in reversed(chunks)], queries[0])
    texts = {c.id: c.chunk.text for c in chunks}
    expected = {
        cid: 1.0 - float(s)  # CrossEncoder.predict applies the sigmoid to a one-label model's logit
        for cid, s in zip(texts, independent_model.predict([(queries[0], t) for t in texts.values()]))
    }
    assert [d for _, d in scored] == sorted(d for _, d in scored)
    np.testing.assert_allclose([d for _, d in scored], [expected[i] for i, _ in scored], atol=1e-5)


def test_score_chunks_refuses_unknown_ids(reranker, queries):
    with pytest.raises(UnknownChunkError):
        reranker.score_chunks([424242424], queries[0])


def test_save_and_load_answer_identically(reranker, queries, tmp_path):
    reranker.save(tmp_path / "saved")
    loaded = dashrag.load(tmp_path / "saved")
    before, after = reranker.retrieve_batch(queries), loaded.retrieve_batch(queries)
    assert [[(c.id, c.score) for c in x] for x, _ in before] == [[(c.id, c.score) for c in x] for x, _ in after]


def test_a_bad_model_path_is_refused_at_validation(tmp_path):
    with pytest.raises(ConfigError, match="no-such-reranker.*is not a directory"):
        dashrag.build_component(ce_config(str(tmp_path / "no-such-reranker")))


def test_the_default_model_says_how_to_provide_it_at_validation_when_absent():
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(DEFAULT_CROSS_ENCODER, local_files_only=True)
        pytest.skip("the default cross-encoder is in this machine's Hugging Face cache")
    except Exception:
        pass
    config = {
        "component": "CrossEncoderRetriever",
        "params": {"children": [{"component": "TFIDFRetriever", "params": {}}]},
    }
    with pytest.raises(ConfigError, match=f"huggingface-cli download {DEFAULT_CROSS_ENCODER}"):
        dashrag.build_component(config)


def test_top_k_above_fetch_k_is_a_config_error():
    with pytest.raises(ConfigError, match="top_k"):
        dashrag.build_component(ce_config("any/model", top_k=FETCH_K + 1))
