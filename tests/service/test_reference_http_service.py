"""The HTTP service reference's clauses, each over HTTP against the real app on a loopback port, with loopback fakes
for what is outside the project (the upstream rewrite LLM, a Text Embeddings Inference server, a /rerank server)."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.retrievers.rerank_server import RerankServer
from tests.service.conftest import LoopbackServer
from tests.service.json_servers import JsonEndpointServer
from tests.service.test_server import dashrag_serve

QUERY = "hmm, so like how does BM25 saturate term frequency"
REWRITE = "BM25 term frequency saturation k1"
OPEN = {"retrieval_score_floor": 0.0, "confidence_threshold": 0.0}  # keep every chunk: the ranking is compared


def answers(text: str):
    return lambda body: (200, {"text": text})


def retrieve(server: LoopbackServer, query: str = QUERY, collection: str = "kw") -> dict:
    response = httpx.post(f"{server.url}/retrieve", json={"query": query, "collection_name": collection,
                                                           "limit": 5, "trace": True}, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def rewrite_step(body: dict) -> dict:
    return next(n for n in body["trace"]["children"] if n["component"] == "rewrite")["selection"]


def lower_keys(headers: dict) -> dict:
    return {k.lower(): v for k, v in headers.items()}


def test_the_rewrite_posts_the_references_upstream_contract_with_its_bearer_token(trees_dir, monkeypatch):
    with JsonEndpointServer(reply=answers(REWRITE)) as llm:
        monkeypatch.setenv("RAG_LLM_ENDPOINT", f"{llm.url}/generate")
        monkeypatch.setenv("RAG_LLM_API_TOKEN", "tok-upstream-123")
        with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir))) as server:
            body = retrieve(server)
            plain = retrieve(server, REWRITE)
    assert rewrite_step(body)["status"] == "rewritten" and rewrite_step(body)["used_query"] == REWRITE
    assert body["context_chunks"] == plain["context_chunks"]  # the rewrite is what was searched
    sent = llm.requests[0]
    assert sent["path"] == "/generate"
    assert set(sent["body"]) == {"prompt", "system_prompt", "temperature", "max_tokens", "stream"}
    assert sent["body"]["prompt"] == QUERY and sent["body"]["stream"] is False
    assert lower_keys(sent["headers"])["authorization"] == "Bearer tok-upstream-123"


def test_llm_endpoint_without_the_rag_prefix_is_the_references_name_too(trees_dir, monkeypatch):
    with JsonEndpointServer(reply=answers(REWRITE)) as llm:
        monkeypatch.setenv("LLM_ENDPOINT", f"{llm.url}/generate")
        with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir))) as server:
            body = retrieve(server)
    assert rewrite_step(body)["used_query"] == REWRITE and len(llm.requests) == 1
    assert "authorization" not in lower_keys(llm.requests[0]["headers"])  # no token variable set: no header


@pytest.mark.parametrize("fenced", [
    f"```\n{REWRITE}\n```", f"```text\n{REWRITE}\n```\n", f"\n  ```sql\n{REWRITE}\n```  "])
def test_markdown_fences_are_stripped_from_the_rewrite(trees_dir, fenced):
    with JsonEndpointServer(reply=answers(fenced)) as llm:
        settings = ServiceSettings(trees_dir=trees_dir, llm_endpoint=llm.url)
        with LoopbackServer(create_app(settings)) as server:
            body = retrieve(server)
    assert rewrite_step(body) | {"detail": None} == {"status": "rewritten", "used_query": REWRITE, "detail": None}


@pytest.mark.parametrize("reply, delay, status", [
    (lambda body: (500, {"error": "down"}), 0.0, "error"),
    (lambda body: (200, {"completion": REWRITE}), 0.0, "error"),
    (answers(REWRITE), 2.0, "timeout"),
    (answers("```\n```"), 0.0, "empty"),
])
def test_a_failing_upstream_rewrite_falls_back_to_the_original_query(trees_dir, reply, delay, status):
    with JsonEndpointServer(reply=reply, delay=delay) as llm:
        settings = ServiceSettings(trees_dir=trees_dir, llm_endpoint=llm.url, llm_timeout_sec=0.5)
        with LoopbackServer(create_app(settings)) as server:
            body = retrieve(server)
    assert rewrite_step(body)["status"] == status and rewrite_step(body)["used_query"] == QUERY


def test_rag_rewrite_settings_shape_the_upstream_request(trees_dir, monkeypatch):
    monkeypatch.setenv("RAG_REWRITE_TEMPERATURE", "0.4")
    monkeypatch.setenv("RAG_REWRITE_MAX_TOKENS", "64")
    monkeypatch.setenv("RAG_REWRITE_SYSTEM_PROMPT", "Answer with keywords only.")
    with JsonEndpointServer(reply=answers(REWRITE)) as llm:
        with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir, llm_endpoint=llm.url))) as server:
            retrieve(server)
    sent = llm.bodies[0]
    assert (sent["temperature"], sent["max_tokens"], sent["system_prompt"]) == (0.4, 64, "Answer with keywords only.")


def test_rag_rewrite_enabled_false_turns_the_rewrite_off(trees_dir, monkeypatch):
    monkeypatch.setenv("RAG_REWRITE_ENABLED", "false")
    with JsonEndpointServer(reply=answers(REWRITE)) as llm:
        with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir, llm_endpoint=llm.url))) as server:
            body = retrieve(server)
    assert rewrite_step(body)["status"] == "off" and llm.requests == []


def tei_embedding_of(model):
    """A TEI ``/embed`` answer made by a real model, as TEI answers: one row per input, a string being one input."""
    def embed(body):
        inputs = body["inputs"]
        return 200, model.embed_queries([inputs] if isinstance(inputs, str) else inputs).tolist()

    return embed


@pytest.mark.slow
def test_query_embeddings_come_from_the_tei_embed_server_when_rag_embed_url_is_set(papers, monkeypatch):
    storage, documents, vectors, model = papers
    query = "how are term frequencies saturated in BM25 scoring"
    cosines = vectors @ model.embed_queries([query])[0]
    expected = [documents[i][0] for i in np.argsort(-cosines)[:5]]
    with JsonEndpointServer(reply=tei_embedding_of(model)) as tei:
        monkeypatch.setenv("RAG_EMBED_URL", tei.url)
        monkeypatch.setenv("QDRANT_URL", str(storage))  # the reference's variable, read directly
        settings = ServiceSettings(qdrant_embedding={"component": "NoSuchEmbedding"}, **OPEN)  # never built
        with LoopbackServer(create_app(settings)) as server:
            body = retrieve(server, query, "papers")
    found = [c["source_id"] for c in body["context_chunks"]]
    assert len(found) >= 2 and found == expected[:len(found)]
    assert {r["path"] for r in tei.requests} == {"/embed"}
    assert {"inputs": query} in tei.bodies  # the query, a string as the reference sends it, embedded by the server


def test_embedding_timeout_sec_bounds_each_embed_request_and_a_late_server_is_a_503(papers):
    storage, _, _, model = papers
    with JsonEndpointServer(reply=tei_embedding_of(model), delay=2.0) as tei:
        settings = ServiceSettings(qdrant=str(storage), embed_url=tei.url, embedding_timeout_sec=0.3,
                                   qdrant_collections=["papers"])
        with LoopbackServer(create_app(settings)) as server:
            response = httpx.post(f"{server.url}/retrieve", json={"query": "bm25", "collection_name": "papers"},
                                  timeout=60)
    detail = response.json()["detail"]
    assert response.status_code == 503 and detail.startswith("search:")
    assert "TEI embedding server at <endpoint>" in detail and tei.url not in detail  # never the operator's URL
    assert "ReadTimeout" in detail and "Traceback" not in detail


@pytest.mark.slow
def test_qdrant_api_key_is_read_directly_from_the_references_variable(refusing_qdrant, monkeypatch):
    monkeypatch.setenv("QDRANT_URL", refusing_qdrant)
    settings = ServiceSettings(qdrant_collections=["papers"], qdrant_embedding={"component": "MiniLMOnnxEmbedding"})
    with LoopbackServer(create_app(settings)) as server:
        without = httpx.post(f"{server.url}/retrieve", json={"query": "x", "collection_name": "papers"}, timeout=60)
    monkeypatch.setenv("QDRANT_API_KEY", "qdrant-key-from-env")
    with LoopbackServer(create_app(settings)) as server:
        keyed = httpx.post(f"{server.url}/retrieve", json={"query": "x", "collection_name": "papers"}, timeout=60)
    assert "HTTP 401" in without.json()["detail"]  # no key sent
    assert "HTTP 403" in keyed.json()["detail"] and "qdrant-key-from-env" not in keyed.text  # the key was sent


def test_an_empty_qdrant_api_key_sends_no_key(refusing_qdrant, monkeypatch):
    monkeypatch.setenv("QDRANT_URL", refusing_qdrant)
    monkeypatch.setenv("QDRANT_API_KEY", "")
    settings = ServiceSettings(qdrant_collections=["papers"], qdrant_embedding={"component": "MiniLMOnnxEmbedding"})
    with LoopbackServer(create_app(settings)) as server:
        answer = httpx.post(f"{server.url}/retrieve", json={"query": "x", "collection_name": "papers"}, timeout=60)
    assert "HTTP 401" in answer.json()["detail"]  # no api-key header at all (an empty one would be a 403)


def test_embed_url_and_embedding_timeout_sec_without_the_rag_prefix_are_read(papers, monkeypatch):
    storage, _, _, model = papers
    for name in ("RAG_EMBED_URL", "RAG_EMBEDDING_TIMEOUT_SEC"):
        monkeypatch.delenv(name, raising=False)
    with JsonEndpointServer(reply=tei_embedding_of(model), delay=2.0) as tei:
        monkeypatch.setenv("EMBED_URL", tei.url)
        monkeypatch.setenv("EMBEDDING_TIMEOUT_SEC", "0.3")
        settings = ServiceSettings(qdrant=str(storage), qdrant_collections=["papers"])
        with LoopbackServer(create_app(settings)) as server:
            response = httpx.post(f"{server.url}/retrieve", json={"query": "bm25", "collection_name": "papers"},
                                  timeout=60)
    assert response.status_code == 503 and "TEI embedding server" in response.json()["detail"]
    assert "ReadTimeout" in response.json()["detail"] and tei.requests  # EMBED_URL's server, EMBEDDING_TIMEOUT_SEC


@pytest.mark.slow
def test_llm_api_token_without_the_rag_prefix_is_the_rewrites_bearer_token(trees_dir, monkeypatch):
    monkeypatch.delenv("RAG_LLM_API_TOKEN", raising=False)
    monkeypatch.setenv("LLM_API_TOKEN", "tok-shared-456")
    with JsonEndpointServer(reply=answers(REWRITE)) as llm:
        monkeypatch.setenv("LLM_ENDPOINT", f"{llm.url}/generate")
        with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir))) as server:
            retrieve(server)
        monkeypatch.setenv("RAG_LLM_API_TOKEN", "tok-rag-789")
        with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir))) as server:
            retrieve(server)
    assert [lower_keys(r["headers"])["authorization"] for r in llm.requests] == ["Bearer tok-shared-456",
                                                                              "Bearer tok-rag-789"]


def test_llm_timeout_sec_without_the_rag_prefix_bounds_the_rewrite(trees_dir, monkeypatch):
    monkeypatch.delenv("RAG_LLM_TIMEOUT_SEC", raising=False)
    monkeypatch.setenv("LLM_TIMEOUT_SEC", "0.3")
    with JsonEndpointServer(reply=answers(REWRITE), delay=2.0) as llm:
        with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir, llm_endpoint=llm.url))) as server:
            body = retrieve(server)
    assert rewrite_step(body)["status"] == "timeout", rewrite_step(body)


def test_a_rerank_entry_without_score_counts_as_zero(trees_dir):
    def some_unscored(body: dict, headers: dict) -> tuple[int, bytes]:
        entries = [{"index": i} if i == 0 else {"index": i, "score": 0.5 + i / 100} for i in range(len(body["texts"]))]
        return 200, json.dumps(entries).encode()

    with RerankServer(answer=some_unscored) as reranker:
        settings = ServiceSettings(trees_dir=trees_dir, reranker_url=reranker.url, **OPEN)
        with LoopbackServer(create_app(settings)) as server:
            body = retrieve(server, "chunk overlap in recursive splitting")
    rerank = next(n for n in body["trace"]["children"] if n["component"] == "rerank")["output"]
    texts = reranker.requests[0]["body"]["texts"]
    assert len(texts) >= 2 and rerank[-1]["rerank_score"] == 0.0  # the unscored first text, last
    assert [c["rerank_score"] for c in rerank[:-1]] == sorted((0.5 + i / 100 for i in range(1, len(texts))),
                                                                reverse=True)


def test_every_dependency_client_is_closed_at_shutdown(papers, trees_dir):
    storage, _, _, model = papers
    with JsonEndpointServer(reply=answers(REWRITE)) as llm, JsonEndpointServer(reply=tei_embedding_of(model)) as tei:
        settings = ServiceSettings(trees_dir=trees_dir, llm_endpoint=llm.url, embed_url=tei.url, qdrant=str(storage),
                                   qdrant_collections=["papers"], **OPEN)
        with LoopbackServer(create_app(settings)) as server:
            retrieve(server, collection="papers")
            held = (llm.open_connections, tei.open_connections)
        assert held == (1, 1)  # kept alive while the service ran
        assert (llm.wait_for_connections(0), tei.wait_for_connections(0)) == (0, 0)  # closed by the shutdown


@pytest.mark.slow
def test_log_level_and_log_format_are_the_references_names(trees_dir):
    with dashrag_serve(trees_dir, LOG_LEVEL="debug", LOG_FORMAT="text") as (url, seen):
        httpx.post(f"{url}/retrieve", json={"query": "bm25", "collection_name": "kw"})
    running = next(line for line in seen if "running on" in line)
    assert not running.lstrip().startswith("{") and " INFO uvicorn.error: Uvicorn running on" in running
