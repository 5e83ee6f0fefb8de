"""What every hosted-service reranker keeps (dashrag/retrievers/remote_reranker.py), for CohereReranker and
JinaReranker alike, each against a real loopback server speaking its service's protocol
(tests/retrievers/rerank_services.py)."""

from __future__ import annotations

import json

import pytest

import dashrag
from dashrag.core.factory import build_component
from dashrag.errors import CredentialError, RetrievalError
from dashrag.retrievers.remote_reranker import RerankerAnswerError
from tests.conftest import EXAMPLE_CORPUS

from .rerank_server import word_overlap
from .rerank_services import KEY_VARS, SERVERS

SECRET = "sk-hosted-3c9d2e1f"
TEXTS = [f"text {i} about rank fusion" if i % 3 == 0 else f"text {i} about chunking" for i in range(10)]
SERVICES = sorted(SERVERS)


@pytest.fixture(params=SERVICES)
def service(request, monkeypatch):
    monkeypatch.setenv(KEY_VARS[request.param], SECRET)
    return request.param


def reranker(service: str, url: str, **params):
    return build_component({"component": service, "params": {"api_base": url, **params}}, "retriever")


def test_scores_come_back_in_text_order_whatever_order_the_service_answers(service):
    with SERVERS[service]() as server:
        scores = reranker(service, server.url).rerank_texts("rank fusion", TEXTS)
    assert scores == [word_overlap("rank fusion", t) for t in TEXTS]


def test_the_key_goes_as_a_bearer_token_to_the_services_path(service):
    with SERVERS[service]() as server:
        reranker(service, server.url).rerank_texts("q", ["a"])
    assert (server.requests[0]["path"], server.requests[0]["headers"]["Authorization"]) == (
        SERVERS[service].PATH, f"Bearer {SECRET}")


def test_top_n_asks_for_every_text_of_each_batch(service):
    with SERVERS[service]() as server:
        reranker(service, server.url, batch_size=4, max_workers=2).rerank_texts("rank fusion", TEXTS)
    sent = sorted((len(r["body"]["documents"]), r["body"]["top_n"]) for r in server.requests)
    assert sent == [(2, 2), (4, 4), (4, 4)] and sorted(server.texts) == sorted(TEXTS)


def test_an_unset_key_is_an_error_naming_its_variable_and_sends_nothing(service, monkeypatch):
    monkeypatch.delenv(KEY_VARS[service])
    with SERVERS[service]() as server:
        with pytest.raises(CredentialError, match=KEY_VARS[service]):
            reranker(service, server.url).rerank_texts("q", ["a"])
    assert server.requests == []


def test_a_compatible_server_without_keys_is_reached_when_the_key_is_not_required(service, monkeypatch):
    monkeypatch.delenv(KEY_VARS[service])
    with SERVERS[service](answer=lambda body, headers: (200, json.dumps(
            {"results": [{"index": 0, "relevance_score": 0.5}]}).encode())) as server:
        assert reranker(service, server.url, api_key_required=False).rerank_texts("q", ["a"]) == [0.5]
    assert "Authorization" not in server.requests[0]["headers"]


MALFORMED = [
    (b"<html>busy</html>", "not JSON"),
    (json.dumps([{"index": 0, "relevance_score": 0.1}]).encode(), "expected a JSON object with 'results'"),
    (json.dumps({"results": [{"index": 0}, {"index": 1, "relevance_score": 0.2}]}).encode(),
     "entry 0 has no 'relevance_score'"),
    (json.dumps({"results": [{"index": 0, "relevance_score": 0.1}, {"index": 2, "relevance_score": 0.2}]}).encode(),
     "index 2, outside 0..1"),
    (json.dumps({"results": [{"index": 1, "relevance_score": 0.1}, {"index": 1, "relevance_score": 0.2}]}).encode(),
     "index 1 is scored twice"),
    (json.dumps({"results": [{"index": 1, "relevance_score": 0.1}]}).encode(), "no score for text(s) 0 of 2"),
    (json.dumps({"results": [{"index": 0, "relevance_score": "high"}, {"index": 1, "relevance_score": 0.2}]}).encode(),
     "relevance_score 'high', not a finite number"),
    (json.dumps({"results": [{"index": "0", "relevance_score": 0.3}, {"index": 1, "relevance_score": 0.2}]}).encode(),
     "index '0', outside 0..1"),
]


@pytest.mark.parametrize("payload, problem", MALFORMED, ids=[p for _, p in MALFORMED])
def test_a_malformed_answer_is_an_error_naming_the_service_and_the_problem(service, payload, problem):
    with SERVERS[service](answer=lambda body, headers: (200, payload)) as server:
        with pytest.raises(RerankerAnswerError) as caught:
            reranker(service, server.url).rerank_texts("q", ["a", "b"])
    message = str(caught.value)
    assert problem in message and message.startswith(f"{service}: {server.url}{SERVERS[service].PATH}")


def test_an_http_error_names_the_service_and_the_status_and_hides_an_echoed_key(service):
    echo = lambda body, headers: (429, f"rate limited for {headers['Authorization']}".encode())  # noqa: E731
    with SERVERS[service](answer=echo) as server:
        with pytest.raises(RetrievalError) as caught:
            reranker(service, server.url).rerank_texts("q", ["a"])
    message = str(caught.value)
    assert message.startswith(service) and "HTTP 429: rate limited for Bearer [REDACTED]" in message
    assert SECRET not in message


@pytest.mark.parametrize("status", [302, 307, 308])
def test_a_redirect_is_not_followed_with_the_key(service, recording_listener, status):
    target = recording_listener()
    redirecting = recording_listener(status=status, headers={"Location": f"{target.url}{SERVERS[service].PATH}"})
    with pytest.raises(RetrievalError, match=f"HTTP {status}: a redirect, not followed"):
        reranker(service, redirecting.url).rerank_texts("q", ["a"])
    assert len(redirecting.received) == 1 and redirecting.saw(SECRET) and target.received == []


def test_over_a_child_it_keeps_the_top_k_by_the_services_scores(service, tmp_path):
    with SERVERS[service]() as server:
        config = {"component": service, "params": {
            "api_base": server.url, "top_k": 3, "fetch_k": 8, "batch_size": 3,
            "children": [{"component": "BM25Retriever", "params": {"top_k": 8}}]}}
        tree = dashrag.build(config, EXAMPLE_CORPUS, tmp_path)
        query = "rank fusion of keyword and dense results"
        chunks, trace = tree.retrieve(query)
    candidates = [c["chunk_id"] for c in trace["children"][0]["output"]]
    texts = {c.id: c.text for c in tree.require_infra().chunks.chunks}
    expected = sorted(candidates, key=lambda cid: (-word_overlap(query, texts[cid]), candidates.index(cid)))[:3]
    assert [c.id for c in chunks] == expected
    assert [c.score for c in chunks] == [pytest.approx(word_overlap(query, texts[cid])) for cid in expected]


def test_the_key_is_in_no_config_trace_or_saved_file(service, tmp_path):
    with SERVERS[service]() as server:
        config = {"component": service, "params": {
            "api_base": server.url, "top_k": 2, "fetch_k": 4,
            "children": [{"component": "BM25Retriever", "params": {"top_k": 4}}]}}
        tree = dashrag.build(config, EXAMPLE_CORPUS, tmp_path / "work")
        _, trace = tree.retrieve("rank fusion")
        tree.save(tmp_path / "saved")
    saved = b"".join(p.read_bytes() for p in (tmp_path / "saved").rglob("*") if p.is_file())
    shown = json.dumps(trace) + json.dumps(tree.to_config())
    assert (SECRET in shown, SECRET.encode() in saved, KEY_VARS[service] in json.dumps(tree.to_config())) == (
        False, False, True)
