"""JinaReranker speaks Jina AI's Reranker API (a real loopback server speaking it: tests/retrievers/rerank_services.py).
What every hosted-service reranker keeps is tested in test_remote_reranker.py."""

from __future__ import annotations

import json

import pytest

import dashrag
from dashrag.core.factory import build_component

from .rerank_services import JinaServer


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", "jina-test-key")


def jina(url: str, **params):
    return build_component({"component": "JinaReranker", "params": {"api_base": url, **params}}, "retriever")


def test_the_request_is_model_query_documents_top_n_and_no_documents_back():
    with JinaServer() as server:
        jina(server.url, model="jina-reranker-v2-base-multilingual").rerank_texts("rank fusion", ["a", "b"])
    assert (server.requests[0]["path"], server.requests[0]["body"]) == ("/v1/rerank", {
        "model": "jina-reranker-v2-base-multilingual", "query": "rank fusion", "documents": ["a", "b"], "top_n": 2,
        "return_documents": False})


def test_an_answer_that_echoes_the_documents_is_read_all_the_same():
    echoing = {"model": "m", "usage": {"total_tokens": 3}, "results": [
        {"index": 1, "relevance_score": 0.9, "document": {"text": "b"}},
        {"index": 0, "relevance_score": 0.2, "document": {"text": "a"}}]}
    with JinaServer(answer=lambda body, headers: (200, json.dumps(echoing).encode())) as server:
        assert jina(server.url).rerank_texts("q", ["a", "b"]) == [0.2, 0.9]


def test_the_defaults_are_jina_s_service_and_key_variable():
    params = dashrag.validate_and_transform({"component": "JinaReranker"})["params"]
    assert (params["api_base"], params["credential"]["params"]["var"], params["api_key_required"], params["model"]) == (
        "https://api.jina.ai", "JINA_API_KEY", True, "jina-reranker-v2-base-multilingual")


def test_a_missing_key_answer_from_the_service_names_the_status(monkeypatch):
    monkeypatch.delenv("JINA_API_KEY")
    with JinaServer() as server:
        with pytest.raises(dashrag.DashragError, match=r"JinaReranker: .* answered HTTP 401: .*Unauthorized"):
            jina(server.url, api_key_required=False).rerank_texts("q", ["a"])
