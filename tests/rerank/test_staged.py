"""StagedRerankPipeline, StagedMMR and cosine_mmr (dashrag/rerank/staged.py): two component stages over candidates
given as JSON, built from the cascade's parts. The stages here are the hosted-service rerankers against real
loopback servers speaking Cohere's and Jina's protocols (tests/retrievers/rerank_services.py), each scoring with a
plain function, so what every stage should answer is known; the cross-encoder stages are tested through
`dashrag rerank-candidates`
(tests/cli/test_rerank_commands.py)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.errors import ConfigError, RerankerError
from dashrag.rerank import Candidate, StagedMMR, StagedRerankPipeline, cosine_mmr, mmr_select
from tests.retrievers.rerank_server import word_overlap
from tests.retrievers.rerank_services import CohereServer, JinaServer

QUERY = "rank fusion of keyword lists"
TEXTS = ["rank fusion", "keyword lists", "dense vectors", "rank fusion of keyword lists merges",
         "lists", "fusion of ranks", "keyword", "nothing in common"]
ONNX = {"component": "MiniLMOnnxEmbedding", "params": {"max_seq_length": 128}}


def shortest_first(query: str, text: str) -> float:
    return 1.0 / len(text)


def candidates(scores=None) -> list[dict]:
    return [{"id": i, "text": t, **({} if scores is None else {"score": scores[i]})} for i, t in enumerate(TEXTS)]


def order(ids, score) -> list:
    return sorted(ids, key=lambda i: (-score(QUERY, TEXTS[i]), ids.index(i)))


@pytest.fixture
def services(monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", "co-key")
    monkeypatch.setenv("JINA_API_KEY", "jina-key")
    with CohereServer() as cohere, JinaServer(score=shortest_first) as jina:
        yield ({"component": "CohereReranker", "params": {"api_base": cohere.url}},
               {"component": "JinaReranker", "params": {"api_base": jina.url}}, cohere, jina)


def test_without_stages_the_given_scores_order_a_missing_one_counting_as_zero():
    scores = [0.5, None, 0.9, -0.2, 0.1, None, 0.7, 0.3]
    given_scores = [{"id": i, "text": t, **({} if s is None else {"score": s})} for i, (t, s) in
                    enumerate(zip(TEXTS, scores))]
    result = StagedRerankPipeline(top_k=8).rerank(QUERY, given_scores)
    assert [r.id for r in result.results] == [2, 6, 0, 7, 4, 1, 5, 3]
    assert [r.input_score for r in result.results][:3] == [0.9, 0.7, 0.5] and result.selection["path"] == "input"


def test_stage1_scores_every_candidate_and_passes_on_stage1_top_n(services):
    cohere, _, server, _ = services
    result = StagedRerankPipeline(cohere, stage1_top_n=4, top_k=10).rerank(QUERY, candidates())
    assert [r.id for r in result.results] == order(list(range(len(TEXTS))), word_overlap)[:4]
    assert sorted(server.texts) == sorted(TEXTS)


def test_stage2_scores_the_best_stage2_top_n_and_the_rest_keep_stage1_order(services):
    cohere, jina, _, jina_server = services
    result = StagedRerankPipeline(cohere, jina, stage2_top_n=3, top_k=6).rerank(QUERY, candidates())
    first = order(list(range(len(TEXTS))), word_overlap)
    assert [r.id for r in result.results] == order(first[:3], shortest_first) + first[3:6]
    assert sorted(jina_server.texts) == sorted(TEXTS[i] for i in first[:3])
    assert [r.scored_by for r in result.results] == ["stage2"] * 3 + ["stage1"] * 3


def test_stage2_top_n_defaults_to_10(services):
    cohere, jina, _, jina_server = services
    many = [{"id": i, "text": f"rank fusion {i} " + "x" * i} for i in range(30)]
    result = StagedRerankPipeline(cohere, jina).rerank(QUERY, many)
    assert (len(jina_server.texts), result.selection["stage2_scored"], len(result.results)) == (10, 10, 10)


def test_arerank_is_rerank_awaited(services):
    cohere, jina, _, _ = services
    pipeline = StagedRerankPipeline(cohere, jina, stage2_top_n=3)
    expected = pipeline.rerank(QUERY, candidates())

    async def both():
        return await asyncio.gather(pipeline.arerank(QUERY, candidates()), pipeline.arerank(QUERY, candidates()))

    assert [[r.id for r in a.results] for a in asyncio.run(both())] == [[r.id for r in expected.results]] * 2


def test_a_failing_stage_is_a_reranker_error_naming_the_stage(services, monkeypatch):
    cohere, jina, _, jina_server = services
    jina_server.answer = lambda body, headers: (500, b"model crashed")
    with pytest.raises(RerankerError) as caught:
        StagedRerankPipeline(cohere, jina).rerank(QUERY, candidates())
    assert caught.value.stage == "precise" and "HTTP 500: model crashed" in str(caught.value)


def test_a_stage_that_cannot_rerank_texts_is_a_config_error():
    with pytest.raises(ConfigError, match="stage2: BM25Retriever cannot rerank texts"):
        StagedRerankPipeline(stage2={"component": "BM25Retriever"})


def test_bad_settings_are_config_errors_naming_the_field():
    with pytest.raises(ConfigError, match="stage2_top_n"):
        StagedRerankPipeline(stage2_top_n=0)
    with pytest.raises(ConfigError, match="lambda_mult"):
        StagedRerankPipeline(mmr=StagedMMR(lambda_mult=1.5))


def test_candidates_may_be_given_as_candidate_objects():
    result = StagedRerankPipeline(top_k=2).rerank(QUERY, [Candidate(id="a", text="x", score=0.1),
                                                    Candidate(id="b", text="y", score=0.4)])
    assert [r.id for r in result.results] == ["b", "a"]


def test_mmr_picks_among_the_last_stages_candidates_and_the_rest_follow(services):
    cohere, jina, _, _ = services
    result = StagedRerankPipeline(cohere, jina, stage2_top_n=3, top_k=5,
                            mmr=StagedMMR(lambda_mult=0.5, embedding=ONNX)).rerank(QUERY, candidates())
    first = order(list(range(len(TEXTS))), word_overlap)
    assert {r.id for r in result.results[:3]} == set(first[:3]) and [r.id for r in result.results[3:]] == first[3:5]
    assert all(r.mmr_score is not None for r in result.results[:3]) and result.selection["mmr"]["ran"]


def test_the_default_lambda_is_the_cascades():
    assert StagedMMR().lambda_mult == 0.7


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=12), st.integers(1, 12),
       st.floats(0, 1), st.integers(0, 2**31 - 1))
def test_cosine_mmr_is_mmr_select_over_the_cosine_of_the_vectors(relevance, k, lam, seed):
    vectors = np.random.default_rng(seed).normal(size=(len(relevance), 4))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert [p.index for p in cosine_mmr(relevance, vectors, k, lam)] == [
        p.index for p in mmr_select(np.array(relevance), unit @ unit.T, lam, k)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=12), st.integers(1, 12))
def test_cosine_mmr_with_lambda_1_is_relevance_order_for_unsorted_input(relevance, k):
    vectors = np.random.default_rng(len(relevance)).normal(size=(len(relevance), 3))
    expected = sorted(range(len(relevance)), key=lambda i: (-relevance[i], i))[:k]
    assert [p.index for p in cosine_mmr(relevance, vectors, k, 1.0)] == expected


def test_a_result_is_json_ready():
    result = StagedRerankPipeline(top_k=1).rerank(QUERY, candidates([0.1] * len(TEXTS)))
    assert json.loads(result.model_dump_json())["results"][0]["id"] == 0
