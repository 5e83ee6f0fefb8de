"""Step 8 over HTTP: the TEI-style reranker on loopback; its failure is a 503 naming the step."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

import dashrag
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS
from tests.retrievers.rerank_server import RerankServer, word_overlap
from tests.service.conftest import KEYWORD, make_client

QUERY = "how does BM25 saturate term frequency"


def test_the_reranker_server_scores_and_orders_the_survivors(trees_dir, rerank_server):
    with make_client(trees_dir=trees_dir, reranker_url=rerank_server.url, retrieval_score_floor=0.0,
                     confidence_threshold=0.0, budget_simple=100_000, budget_medium=100_000) as client:
        answer = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw"}).json()
    chunks = answer["context_chunks"]
    assert answer["reranker"] == "HttpReranker"
    assert [c["rerank_score"] for c in chunks] == [word_overlap(QUERY, c["text"]) for c in chunks]
    assert [c["rerank_score"] for c in chunks] == sorted((c["rerank_score"] for c in chunks), reverse=True)
    assert rerank_server.queries == [QUERY] and len(rerank_server.texts) == len(chunks)


def test_the_confidence_filter_applies_to_the_rerank_score(trees_dir, rerank_server):
    with make_client(trees_dir=trees_dir, reranker_url=rerank_server.url, retrieval_score_floor=0.0,
                     confidence_threshold=0.5, budget_simple=100_000, budget_medium=100_000) as client:
        chunks = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw"}).json()["context_chunks"]
    assert chunks and all(c["rerank_score"] >= 0.5 for c in chunks)
    assert len(chunks) < len(rerank_server.texts)


def test_a_reranker_server_that_is_down_is_a_503_naming_the_rerank_step(trees_dir):
    with RerankServer() as server:
        url = server.url
    with make_client(trees_dir=trees_dir, reranker_url=url) as client:
        answer = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw"})
    assert answer.status_code == 503
    detail = answer.json()["detail"]
    assert detail.startswith("rerank: HttpReranker") and "Traceback" not in answer.text


def test_a_failing_reranker_never_shows_its_key(trees_dir, monkeypatch):
    secret = "sk-very-secret-value"
    monkeypatch.setenv("RAG_RERANKER_API_KEY", secret)
    with RerankServer(answer=lambda body, headers: (500, f"bad key {headers.get('Authorization')}".encode())) as server:
        with make_client(trees_dir=trees_dir, reranker_url=server.url) as client:
            answer = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw"})
        assert server.requests[0]["headers"]["Authorization"] == f"Bearer {secret}"
    assert answer.status_code == 503 and "rerank" in answer.json()["detail"] and secret not in answer.text


@pytest.mark.slow
def test_a_reranker_component_config_is_used_as_configured(trees_dir, rerank_server):
    config = {"component": "HttpReranker", "params": {"api_base": rerank_server.url, "batch_size": 2}}
    with make_client(trees_dir=trees_dir, reranker=config, retrieval_score_floor=0.0, confidence_threshold=0.0,
                     budget_simple=100_000) as client:
        chunks = client.post("/retrieve", json={"query": "bm25", "collection_name": "kw"}).json()["context_chunks"]
    assert len(rerank_server.requests) == (len(chunks) + 1) // 2


def test_a_tree_whose_own_stage_fails_is_a_503_naming_the_search_step(trees_copy):
    """A collection's tree with an HTTP reranking stage: its server goes away after the tree loaded."""
    with RerankServer() as server:
        config = {"component": "HttpReranker", "params": {"api_base": server.url, "children": [KEYWORD]}}
        dashrag.build(config, EXAMPLE_CORPUS, trees_copy.parent / "work").save(trees_copy / "staged")
        app = create_app(ServiceSettings(trees_dir=trees_copy))  # loads (and calibrates) while the server is up
    with TestClient(app) as client:
        answer = client.post("/retrieve", json={"query": QUERY, "collection_name": "staged"})
    assert answer.status_code == 503
    assert answer.json()["detail"].startswith("search: collection 'staged': HttpReranker")
