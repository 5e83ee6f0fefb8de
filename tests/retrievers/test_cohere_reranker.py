"""CohereReranker speaks Cohere's Rerank API v2 (a real loopback server speaking it:
tests/retrievers/rerank_services.py). What every hosted-service reranker keeps is tested in test_remote_reranker.py."""

from __future__ import annotations

import pytest

import dashrag
from dashrag.core.factory import build_component

from .rerank_services import CohereServer


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", "co-test-key")


def test_the_request_is_model_query_documents_and_top_n():
    with CohereServer() as server:
        build_component(
            {"component": "CohereReranker", "params": {"api_base": server.url, "model": "rerank-v3.5"}}, "retriever"
        ).rerank_texts("rank fusion", ["a", "b"])
    assert (server.requests[0]["path"], server.requests[0]["body"]) == (
        "/v2/rerank",
        {"model": "rerank-v3.5", "query": "rank fusion", "documents": ["a", "b"], "top_n": 2},
    )


def test_max_tokens_per_doc_is_sent_only_when_given():
    with CohereServer() as server:
        build_component(
            {"component": "CohereReranker", "params": {"api_base": server.url, "max_tokens_per_doc": 512}}, "retriever"
        ).rerank_texts("q", ["a"])
    assert server.requests[0]["body"]["max_tokens_per_doc"] == 512


def test_the_defaults_are_cohere_s_service_and_key_variable():
    params = dashrag.validate_and_transform({"component": "CohereReranker"})["params"]
    assert (params["api_base"], params["credential"]["params"]["var"], params["api_key_required"], params["model"]) == (
        "https://api.cohere.com",
        "COHERE_API_KEY",
        True,
        "rerank-v3.5",
    )


def test_a_missing_key_answer_from_the_service_names_the_status(monkeypatch):
    monkeypatch.delenv("COHERE_API_KEY")
    with CohereServer() as server:
        with pytest.raises(dashrag.DashragError, match=r"CohereReranker: .* answered HTTP 401: .*no api key supplied"):
            build_component(
                {"component": "CohereReranker", "params": {"api_base": server.url, "api_key_required": False}},
                "retriever",
            ).rerank_texts("q", ["a"])
