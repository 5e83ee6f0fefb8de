"""HttpReranker against a real loopback /rerank server (tests/retrievers/rerank_server.py)."""

from __future__ import annotations

import json

import pytest

import dashrag
from dashrag.errors import CredentialError, RetrievalError
from dashrag.retrievers.http_reranker import HttpReranker, RerankerAnswerError, parse_scores, plan_batches
from tests.conftest import EXAMPLE_CORPUS

from .rerank_server import RerankServer

KEY_VAR = "DASHRAG_TEST_RERANK_KEY"
SECRET = "sk-test-0f9e8d7c6b5a"
TEXTS = [f"text {i} about rank fusion" if i % 3 == 0 else f"text {i} about chunking" for i in range(10)]


def reranker(url: str, **params) -> HttpReranker:
    return HttpReranker({"api_base": url, **params})


def shortest_first(query: str, text: str) -> float:
    return 1.0 / len(text)


def with_key(url: str, **params) -> dict:
    return {"api_base": url, "credential": {"component": "EnvCredential", "params": {"var": KEY_VAR}}, **params}


def test_an_unset_key_variable_sends_no_authorization(monkeypatch):
    monkeypatch.delenv(KEY_VAR, raising=False)
    with RerankServer() as server:
        HttpReranker(with_key(server.url)).rerank_texts("q", ["a"])
    assert "Authorization" not in server.requests[0]["headers"]


# -- the answer format ------------------------------------------------------------------

def test_parse_scores_puts_scores_in_text_order():
    assert parse_scores([{"index": 2, "score": 0.1}, {"index": 0, "score": 0.9}, {"index": 1, "score": 0.5}], 3) == [
        0.9,
        0.5,
        0.1,
    ]


def test_scores_come_back_in_text_order_whatever_order_the_server_answers():
    with RerankServer() as server:
        scores = reranker(server.url).rerank_texts("rank fusion", TEXTS)
    assert scores == [server.score("rank fusion", t) for t in TEXTS]


# -- batching and bounded concurrency --------------------------------------------------


def test_texts_go_in_batches_of_batch_size():
    with RerankServer() as server:
        reranker(server.url, batch_size=3, max_workers=2).rerank_texts("rank fusion", TEXTS)
    assert (sorted(len(r["body"]["texts"]) for r in server.requests), sorted(server.texts)) == (
        [1, 3, 3, 3],
        sorted(TEXTS),
    )


def test_no_more_than_max_workers_requests_are_in_flight():
    with RerankServer(delay=0.15, gather=3) as server:
        reranker(server.url, batch_size=1, max_workers=3).rerank_texts("rank fusion", TEXTS)
    assert (len(server.requests), server.max_in_flight) == (10, 3)


def test_one_worker_sends_one_request_at_a_time():
    with RerankServer(delay=0.05) as server:
        reranker(server.url, batch_size=2, max_workers=1).rerank_texts("rank fusion", TEXTS)
    assert (len(server.requests), server.max_in_flight) == (5, 1)


def test_the_body_is_query_texts_and_truncate():
    with RerankServer() as server:
        reranker(server.url, truncate=False).rerank_texts("rank fusion", TEXTS[:2])
    assert (server.requests[0]["path"], server.requests[0]["body"]) == (
        "/rerank",
        {"query": "rank fusion", "texts": TEXTS[:2], "truncate": False},
    )


# -- as a retriever over a child ---------------------------------------------------------


@pytest.fixture(scope="module")
def child_tree_server():
    with RerankServer(score=shortest_first) as server:
        yield server


@pytest.fixture(scope="module")
def over_bm25(child_tree_server, tmp_path_factory):
    config = {
        "component": "HttpReranker",
        "params": {
            "api_base": child_tree_server.url,
            "top_k": 3,
            "fetch_k": 8,
            "batch_size": 3,
            "children": [{"component": "BM25Retriever", "params": {"top_k": 8}}],
        },
    }
    chunker = {"component": "RecursiveCharacterChunker", "params": {"chunk_size": 300, "chunk_overlap": 0}}
    return dashrag.build(config, EXAMPLE_CORPUS, tmp_path_factory.mktemp("http-rerank"), chunker=chunker)


def test_retrieve_orders_the_child_candidates_by_the_server_scores(over_bm25):
    chunks, trace = over_bm25.retrieve("rank fusion of keyword and dense results")
    candidates = trace["children"][0]["output"]
    texts = {c.id: c.text for c in over_bm25.require_infra().chunks.chunks}
    expected = sorted(candidates, key=lambda c: (-shortest_first("", texts[c["chunk_id"]]), candidates.index(c)))[:3]
    assert [c.id for c in chunks] == [c["chunk_id"] for c in expected]


def test_retrieve_scores_are_the_server_scores(over_bm25):
    chunks, _ = over_bm25.retrieve("rank fusion of keyword and dense results")
    assert [c.score for c in chunks] == [pytest.approx(shortest_first("", c.chunk.text)) for c in chunks]


def test_score_chunks_gives_negated_server_scores_ascending(over_bm25):
    ids = [c.id for c in over_bm25.require_infra().chunks.chunks[:6]]
    ranked = over_bm25.score_chunks(ids, "rank fusion")
    texts = {c.id: c.text for c in over_bm25.require_infra().chunks.chunks}
    assert ranked == sorted(
        ((cid, pytest.approx(-shortest_first("", texts[cid]))) for cid in ids),
        key=lambda pair: (-shortest_first("", texts[pair[0]]), ids.index(pair[0])),
    )


def test_without_a_child_retrieve_is_refused(tmp_path):
    with RerankServer() as server:
        alone = dashrag.build(
            {"component": "HttpReranker", "params": {"api_base": server.url}}, EXAMPLE_CORPUS, tmp_path
        )
        with pytest.raises(RetrievalError, match="no child retriever"):
            alone.retrieve("rank fusion")


# -- broken servers ----------------------------------------------------------------------

MALFORMED = [
    (b"<html>oops</html>", "not JSON"),
    (json.dumps({"error": "busy"}).encode(), "expected a JSON list"),
    (json.dumps([{"score": 0.3}, {"index": 1, "score": 0.2}]).encode(), "entry 0 has no 'index'"),
    (json.dumps([{"index": 0, "score": 0.1}, {"index": 7, "score": 0.2}]).encode(), "index 7, outside 0..1"),
    (json.dumps([{"index": 0, "score": 0.1}, {"index": 0, "score": 0.2}]).encode(), "index 0 is scored twice"),
    (json.dumps([{"index": 1, "score": 0.1}]).encode(), "no score for text(s) 0 of 2"),
    (
        json.dumps([{"index": 0, "score": "high"}, {"index": 1, "score": 0.2}]).encode(),
        "score 'high', not a finite number",
    ),
    (b'[{"index": 0, "score": NaN}, {"index": 1, "score": 0.2}]', "score nan, not a finite number"),
    (json.dumps(["0.5", "0.2"]).encode(), "entry 0 is str"),
]


@pytest.mark.parametrize("payload, problem", MALFORMED, ids=[p for _, p in MALFORMED])
def test_a_malformed_answer_is_an_error_naming_the_problem(payload, problem):
    with RerankServer(answer=lambda body, headers: (200, payload)) as server:
        with pytest.raises(RerankerAnswerError) as caught:
            reranker(server.url).rerank_texts("q", ["a", "b"])
    assert problem in str(caught.value) and "batch 1" in str(caught.value)


def test_a_server_error_status_is_an_error_with_the_status():
    with RerankServer(answer=lambda body, headers: (503, b"model loading")) as server:
        with pytest.raises(RetrievalError, match=r"answered HTTP 503: model loading"):
            reranker(server.url).rerank_texts("q", ["a"])


def test_a_timeout_is_an_error():
    with RerankServer(delay=1.0) as server:
        with pytest.raises(RetrievalError, match="request failed"):
            reranker(server.url, timeout_s=0.2).rerank_texts("q", ["a"])


def test_an_unreachable_server_is_an_error():
    with RerankServer() as server:
        url = server.url
    with pytest.raises(RetrievalError, match="request failed"):
        reranker(url, timeout_s=2).rerank_texts("q", ["a"])


# -- the API key: sent, never shown ------------------------------------------------------


def test_the_api_key_is_sent_as_a_bearer_token(monkeypatch):
    monkeypatch.setenv(KEY_VAR, SECRET)
    with RerankServer() as server:
        HttpReranker(with_key(server.url)).rerank_texts("q", ["a"])
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"


def test_a_missing_required_key_is_an_error_naming_the_variable_and_sends_nothing(monkeypatch):
    monkeypatch.delenv(KEY_VAR, raising=False)
    with RerankServer() as server:
        with pytest.raises(CredentialError, match=KEY_VAR):
            HttpReranker(with_key(server.url, api_key_required=True)).rerank_texts("q", ["a"])
    assert server.requests == []


def test_a_server_echoing_the_key_does_not_put_it_in_the_error(monkeypatch):
    monkeypatch.setenv(KEY_VAR, SECRET)
    echo = lambda body, headers: (401, f"bad key: {headers['Authorization']}".encode())  # noqa: E731
    with RerankServer(answer=echo) as server:
        with pytest.raises(RetrievalError) as caught:
            HttpReranker(with_key(server.url)).rerank_texts("q", ["a"])
    assert SECRET not in str(caught.value) and "HTTP 401: bad key: Bearer [REDACTED]" in str(caught.value)


def test_the_key_is_in_no_trace_config_or_saved_file(monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_VAR, SECRET)
    with RerankServer() as server:
        config = {
            "component": "HttpReranker",
            "params": {
                **with_key(server.url),
                "children": [{"component": "BM25Retriever", "params": {"top_k": 4}}],
                "top_k": 2,
                "fetch_k": 4,
            },
        }
        tree = dashrag.build(config, EXAMPLE_CORPUS, tmp_path / "work")
        _, trace = tree.retrieve("rank fusion")
        tree.save(tmp_path / "saved")
    saved = b"".join(p.read_bytes() for p in (tmp_path / "saved").rglob("*") if p.is_file())
    visible = json.dumps(trace) + json.dumps(tree.to_config()) + repr(tree.nested["credential"])
    assert (SECRET in visible, SECRET.encode() in saved, KEY_VAR in json.dumps(tree.to_config())) == (
        False,
        False,
        True,
    )


def test_scores_must_be_finite_numbers_not_booleans():
    with pytest.raises(RerankerAnswerError, match="not a finite number"):
        parse_scores([{"index": 0, "score": True}], 1)


def test_plan_batches_covers_every_text_once():
    assert plan_batches(7, 3) == [(0, 3), (3, 6), (6, 7)]


def test_no_texts_send_no_request():
    with RerankServer() as server:
        assert reranker(server.url).rerank_texts("q", []) == []
    assert server.requests == []


# -- protocol "score": the fragment service's per-fragment /score calls --------------------------------------------

MANY = [f"fragment {i} on rank fusion" if i % 4 == 0 else f"fragment {i} on chunking" for i in range(25)]


def test_the_score_protocol_sends_one_request_per_text_and_returns_its_scores_in_text_order():
    from tests.retrievers.rerank_server import word_overlap

    from .rerank_services import ScoreServer

    with ScoreServer() as server:
        scores = reranker(server.url, protocol="score", model="bge-m3").rerank_texts("rank fusion", MANY)
    assert scores == [word_overlap("rank fusion", t) for t in MANY]
    assert len(server.requests) == len(MANY) and {r["path"] for r in server.requests} == {"/score"}
    assert sorted(server.texts) == sorted(MANY)
    assert server.requests[0]["body"].keys() == {"model", "text_1", "text_2"}
    assert {r["body"]["model"] for r in server.requests} == {"bge-m3"}


def test_the_score_protocol_keeps_at_most_max_parallelism_requests_in_flight_10_by_default():
    from .rerank_services import ScoreServer

    with ScoreServer(delay=0.1, gather=10) as server:
        reranker(server.url, protocol="score").rerank_texts("rank fusion", MANY)
    with ScoreServer(delay=0.1, gather=3) as narrow:
        reranker(narrow.url, protocol="score", max_parallelism=3).rerank_texts("rank fusion", MANY)
    assert (server.max_in_flight, narrow.max_in_flight) == (10, 3)
    assert "model" not in server.requests[0]["body"]  # no model named: none sent


def test_the_score_protocol_reranks_a_childs_candidates(tmp_path):
    from .rerank_services import ScoreServer

    with ScoreServer(score=shortest_first) as server:
        tree = dashrag.build({"component": "HttpReranker", "params": {
            "api_base": server.url, "protocol": "score", "top_k": 3, "fetch_k": 8,
            "children": [{"component": "BM25Retriever", "params": {"top_k": 8}}]}}, EXAMPLE_CORPUS, tmp_path / "t")
        chunks, trace = tree.retrieve("rank fusion")
    assert len(server.requests) == trace["selection"]["batches"] == trace["selection"]["candidates"]
    assert [c.score for c in chunks] == sorted((1.0 / len(t) for t in server.texts), reverse=True)[:3]


def test_a_malformed_score_answer_is_an_error_naming_the_problem():
    from .rerank_services import ScoreServer

    with ScoreServer() as server:
        server.answer = lambda body, headers: (200, json.dumps({"score": 0.5}).encode())
        with pytest.raises(RerankerAnswerError, match="expected a JSON object with 'data'"):
            reranker(server.url, protocol="score").rerank_texts("q", ["a"])
