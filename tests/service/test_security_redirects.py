"""No redirect is followed with a credential (docs/security.md): the service's reranker and its rewrite LLM
answering 3xx, through the real server on loopback; the redirect's target is a listener that records what
it receives, and it receives nothing."""

from __future__ import annotations

import httpx
import pytest

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.service.conftest import LoopbackServer

SECRET = "sk-reranker-secret-77a0"


@pytest.mark.slow
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirecting_reranker_gets_no_second_request_and_the_key_goes_nowhere_else(
        trees_dir, recording_listener, monkeypatch, status):
    monkeypatch.setenv("RAG_RERANKER_API_KEY", SECRET)
    target = recording_listener()
    redirecting = recording_listener(status=status, headers={"Location": f"{target.url}/rerank"})
    settings = ServiceSettings(trees_dir=trees_dir, reranker_url=redirecting.url)
    with LoopbackServer(create_app(settings)) as server:
        answer = httpx.post(f"{server.url}/retrieve", json={"query": "bm25 saturation", "collection_name": "kw"})
    assert answer.status_code == 503 and answer.json()["detail"].startswith("rerank")
    assert f"HTTP {status}" in answer.json()["detail"] and "not followed" in answer.json()["detail"]
    assert len(redirecting.received) == 1 and redirecting.saw(SECRET)  # the configured server, once
    assert target.received == [] and SECRET not in answer.text


@pytest.mark.slow
@pytest.mark.parametrize("status", [302, 307])
def test_a_redirecting_rewrite_llm_gets_no_second_request(trees_dir, recording_listener, monkeypatch, status):
    monkeypatch.setenv("RAG_LLM_API_KEY", SECRET)
    target = recording_listener()
    redirecting = recording_listener(status=status, headers={"Location": f"{target.url}/v1/chat/completions"})
    settings = ServiceSettings(trees_dir=trees_dir, llm_model="openai/rewriter", llm_api_base=f"{redirecting.url}/v1")
    with LoopbackServer(create_app(settings)) as server:
        answer = httpx.post(f"{server.url}/retrieve", json={"query": "bm25 saturation", "collection_name": "kw",
                                                            "trace": True}, timeout=120)
    assert answer.status_code == 200  # the rewrite fails open: the original query is searched
    rewrite = next(step for step in answer.json()["trace"]["children"] if step["component"] == "rewrite")
    assert rewrite["selection"]["status"] == "error"
    assert len(redirecting.received) == 1 and redirecting.saw(SECRET)
    assert target.received == [] and SECRET not in answer.text
