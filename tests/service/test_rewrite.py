"""Step 3 over HTTP: the LLM rewrite against a real OpenAI-compatible server on loopback, fail-open."""

from __future__ import annotations

import pytest

from tests.llm.openai_server import Reply, http_error, plain_text, raw_arguments, slow
from tests.service.conftest import make_client

QUERY = "hmm, so like how does BM25 saturate term frequency"
REWRITE = "BM25 term frequency saturation k1"


def rewrite_call(text: str) -> Reply:
    import json

    return raw_arguments(json.dumps({"query": text}), function="rewrite_query")


def run(trees_dir, server, body_query: str = QUERY, **settings):
    with make_client(trees_dir=trees_dir, llm_model="openai/rewriter", llm_api_base=server.api_base,
                     llm_timeout_sec=1.0, **settings) as client:
        answer = client.post("/retrieve", json={"query": body_query, "collection_name": "kw", "trace": True})
        plain = client.post("/retrieve", json={"query": REWRITE, "collection_name": "kw"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return body, next(n for n in body["trace"]["children"] if n["component"] == "rewrite")["selection"], plain.json()


def test_a_rewrite_is_searched_instead_of_the_original(trees_dir, openai_server):
    openai_server.script(rewrite_call(REWRITE), rewrite_call(REWRITE))
    body, step, plain = run(trees_dir, openai_server)
    assert step["status"] == "rewritten" and step["used_query"] == REWRITE
    assert body["context_chunks"] == plain["context_chunks"]
    request = openai_server.requests[0].body
    assert request["tool_choice"]["function"]["name"] == "rewrite_query"
    assert request["messages"][-1]["content"] == QUERY


def test_the_complexity_class_comes_from_the_original_query_not_the_rewrite(trees_dir, openai_server):
    long_query = " ".join(["retrieval"] * 30)
    openai_server.script(rewrite_call("bm25"), rewrite_call("bm25"))
    body, step, _ = run(trees_dir, openai_server, body_query=long_query)
    complexity = next(n for n in body["trace"]["children"] if n["component"] == "complexity")
    assert step["used_query"] == "bm25" and complexity["selection"]["complexity"] == "complex"


@pytest.mark.parametrize("reply, status", [
    (http_error(500, "the model crashed"), "error"),
    (raw_arguments("{not json", function="rewrite_query"), "error"),
    (slow(3.0, rewrite_call(REWRITE)), "timeout"),
    (rewrite_call("   "), "empty"),
    (plain_text(""), "empty"),
])
@pytest.mark.slow
def test_a_failing_rewrite_falls_back_to_the_original_query(trees_dir, openai_server, reply, status):
    openai_server.script(reply)
    body, step, _ = run(trees_dir, openai_server)
    assert step["status"] == status and step["used_query"] == QUERY
    with make_client(trees_dir=trees_dir) as client:
        original = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw"}).json()
    assert body["context_chunks"] == original["context_chunks"]


def test_the_rewrite_key_is_read_by_reference_and_sent(trees_dir, openai_server, monkeypatch):
    monkeypatch.setenv("MY_REWRITE_KEY", "sk-rewrite-secret")
    openai_server.script(rewrite_call(REWRITE), rewrite_call(REWRITE))
    body, step, _ = run(trees_dir, openai_server, llm_api_key_var="MY_REWRITE_KEY")
    headers = {k.lower(): v for k, v in openai_server.requests[0].headers.items()}
    assert headers["authorization"] == "Bearer sk-rewrite-secret"
    assert "sk-rewrite-secret" not in str(body)


def test_without_a_rewrite_model_the_step_is_off(client):
    body = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw", "trace": True}).json()
    assert body["trace"]["children"][0]["selection"]["status"] == "off"
