"""The critical rules of docs/security.md, through the real server on loopback (uvicorn, httpx) with a
listener that records every request it receives: a config sent over HTTP reaches only the credentials
and endpoints the operator allowed; a state-changing request from another origin is refused before
anything runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS
from tests.fixtures.jobs import finished_job
from tests.service.conftest import KEYWORD, LoopbackServer

SECRET = "sk-server-secret-4f1c"  # the value of a server variable no client was allowed to name


def rerank_tree(api_base: str, var: str) -> dict:
    return {"component": "HttpReranker", "params": {
        "api_base": api_base, "api_key_required": True, "top_k": 3, "fetch_k": 5,
        "credential": {"component": "EnvCredential", "params": {"var": var}},
        "children": [{"component": "BM25Retriever", "params": {"top_k": 5}}]}}


def serve(trees: Path, **settings) -> LoopbackServer:
    return LoopbackServer(create_app(ServiceSettings(trees_dir=trees, data_root=EXAMPLE_CORPUS.parent, **settings)))


def uploads(folder: Path) -> list[tuple[str, tuple[str, bytes, str]]]:
    return [("corpus", (p.name, p.read_bytes(), "text/plain")) for p in sorted(folder.glob("*.md"))]


@pytest.fixture
def server_secret(monkeypatch):
    monkeypatch.setenv("RAG_LLM_API_KEY", SECRET)
    return "RAG_LLM_API_KEY"


def test_a_build_naming_a_credential_the_operator_did_not_allow_is_refused_and_sends_nothing(
        trees_copy, server_secret, recording_listener):
    listener = recording_listener()
    config = rerank_tree(listener.url, server_secret)
    with serve(trees_copy) as server:
        as_json = httpx.post(f"{server.url}/trees", json={"name": "leak", "config": config, "corpus_path": "corpus"})
        as_upload = httpx.post(f"{server.url}/trees", data={"name": "leak2", "config": json.dumps(config)},
                               files=uploads(EXAMPLE_CORPUS))
        time.sleep(0.5)  # a build that had started would have probed the reranker by now
        listed = httpx.get(f"{server.url}/trees").json()
    for answer in (as_json, as_upload):
        assert answer.status_code == 422
        problems = {e["path"]: e["message"] for e in answer.json()["detail"]}
        assert "RAG_LLM_API_KEY" in problems["params.credential.params.var"]
        assert "--allow-endpoint" in problems["params.api_base"]
        assert SECRET not in answer.text
    assert listener.received == [] and {t["name"] for t in listed} == {"kw", "scifact"}
    assert not [p.name for p in trees_copy.iterdir() if p.name.startswith(".")]  # no upload or work folder left


@pytest.mark.slow
def test_an_allowed_credential_and_endpoint_are_used_so_the_check_is_no_blanket_refusal(
        trees_copy, server_secret, rerank_server):
    config = rerank_tree(rerank_server.url, server_secret)
    with serve(trees_copy, allow_credentials=[server_secret], allow_endpoints=[rerank_server.url]) as server:
        accepted = httpx.post(f"{server.url}/trees", json={"name": "allowed", "config": config,
                                                           "corpus_path": "corpus"})
        assert accepted.status_code == 202, accepted.text
        assert finished_job(server.url, accepted.json()["job_id"], within_s=120)["status"] == "done"
        answer = httpx.post(f"{server.url}/trees/allowed/query", json={"query": "BM25 term frequency"})
    assert answer.status_code == 200 and answer.json()["chunks"]
    assert rerank_server.requests and all(r["headers"]["Authorization"] == f"Bearer {SECRET}"
                                          for r in rerank_server.requests)


def test_an_allowed_endpoint_is_a_prefix_of_scheme_host_port_and_path_segments(trees_copy, recording_listener):
    listener = recording_listener()
    with serve(trees_copy, allow_endpoints=[f"{listener.url}/team"]) as server:
        def problems(api_base: str) -> list[str]:
            tree = {"component": "HttpReranker", "params": {"api_base": api_base}}
            return [e["path"] for e in httpx.post(f"{server.url}/trees/validate", json=tree).json()["errors"]]

        inside, sibling = problems(f"{listener.url}/team/v1"), problems(f"{listener.url}/teammate")
        other_port = problems(listener.url.rsplit(":", 1)[0] + ":1/team")
    assert "params.api_base" not in inside
    assert "params.api_base" in sibling and "params.api_base" in other_port
    assert listener.received == []


def test_an_llm_left_to_its_provider_endpoint_is_refused_over_http(client):
    tree = {"component": "AgenticRerankerRetriever", "params": {
        "llm_model": {"component": "LiteLLMModel", "params": {"model": "openai/gpt-4o-mini"}}}}
    answer = client.post("/trees/validate", json=tree).json()
    problems = {e["path"]: e["message"] for e in answer["errors"]}
    assert answer["valid"] is False and "provider's own endpoint" in problems["params.llm_model.params.api_base"]
    assert "OPENAI_API_KEY" in problems["params.llm_model.params.credential.params.var"]


@pytest.mark.parametrize("component, var", [("CohereReranker", "COHERE_API_KEY"), ("JinaReranker", "JINA_API_KEY")])
def test_a_hosted_rerankers_default_service_and_key_are_refused_over_http(client, component, var):
    """Their api_base and credential are declared by kind, like HttpReranker's: the defaults too."""
    tree = {"component": component, "params": {"children": [{"component": "BM25Retriever"}]}}
    answer = client.post("/trees/validate", json=tree).json()
    problems = {e["path"]: e["message"] for e in answer["errors"]}
    assert answer["valid"] is False and "--allow-endpoint" in problems["params.api_base"]
    assert var in problems["params.credential.params.var"]


def test_a_cross_origin_build_is_refused_before_anything_runs(trees_copy, server_secret, recording_listener):
    """The attack: a web page open in the operator's browser posts a multipart form (a simple request,
    no preflight) to the service on loopback. Even with the credential and endpoint allowed, so that the
    config itself would pass, nothing is built and nothing reaches the listener."""
    listener = recording_listener()
    config = json.dumps(rerank_tree(listener.url, server_secret))
    allowed = {"allow_credentials": [server_secret], "allow_endpoints": [listener.url]}
    with serve(trees_copy, **allowed) as server:
        form = {"name": "evil", "config": config}
        from_page = httpx.post(f"{server.url}/trees", data=form, files=uploads(EXAMPLE_CORPUS),
                               headers={"Origin": "http://evil.example"})
        no_origin = httpx.post(f"{server.url}/trees", data=form, files=uploads(EXAMPLE_CORPUS),
                               headers={"Sec-Fetch-Site": "cross-site"})
        rebound = httpx.post(f"{server.url}/trees", data=form, files=uploads(EXAMPLE_CORPUS),
                             headers={"Origin": "http://evil.example:8051", "Host": "evil.example:8051"})
        preflight = httpx.options(f"{server.url}/trees", headers={
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
        delete = httpx.delete(f"{server.url}/trees/kw", headers={"Origin": "http://evil.example"})
        time.sleep(0.5)
        listed = {t["name"] for t in httpx.get(f"{server.url}/trees").json()}
    for answer in (from_page, no_origin, rebound, preflight, delete):
        assert answer.status_code == 403 and answer.json()["detail"].startswith("cross-origin")
    assert listener.received == [] and listed == {"kw", "scifact"}
    assert not [p.name for p in trees_copy.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_the_services_own_page_and_a_named_origin_may_build_and_queries_stay_open_to_every_origin(trees_copy):
    with serve(trees_copy, cors_origins=["*", "https://ui.example"]) as server:
        def build(name: str, origin: str) -> httpx.Response:
            return httpx.post(f"{server.url}/trees", headers={"Origin": origin},
                              json={"name": name, "config": KEYWORD, "corpus_path": "corpus"})

        own, named = build("own", server.url), build("named", "https://ui.example")
        query = httpx.post(f"{server.url}/retrieve", headers={"Origin": "http://anyone.example"},
                           json={"query": "bm25", "collection_name": "kw"})
        for accepted in (own, named):
            assert accepted.status_code == 202, accepted.text
            assert finished_job(server.url, accepted.json()["job_id"], within_s=120)["status"] == "done"
    assert query.status_code == 200 and query.headers["access-control-allow-origin"] == "*"
