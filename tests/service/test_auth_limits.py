"""Optional bearer auth (token by reference), request size limits, request ids, CORS."""

from __future__ import annotations

import pytest

from tests.service.conftest import make_client


@pytest.mark.slow
def test_with_auth_every_route_but_health_needs_the_token(trees_dir, monkeypatch):
    monkeypatch.setenv("DASHRAG_TEST_TOKEN", "t0ken")
    with make_client(trees_dir=trees_dir, auth_token_var="DASHRAG_TEST_TOKEN") as client:
        assert client.get("/health").status_code == 200
        assert client.get("/trees").status_code == 401
        assert client.get("/trees", headers={"Authorization": "Bearer wrong"}).status_code == 401
        good = client.post("/retrieve", json={"query": "bm25", "collection_name": "kw"},
                           headers={"Authorization": "Bearer t0ken"})
        assert good.status_code == 200 and "t0ken" not in good.text


@pytest.mark.slow
def test_auth_with_an_unset_token_variable_refuses_and_names_the_variable(trees_dir, monkeypatch):
    monkeypatch.delenv("DASHRAG_TEST_TOKEN", raising=False)
    with make_client(trees_dir=trees_dir, auth_token_var="DASHRAG_TEST_TOKEN") as client:
        answer = client.get("/trees", headers={"Authorization": "Bearer x"})
    assert answer.status_code == 503 and "DASHRAG_TEST_TOKEN" in answer.json()["detail"]


@pytest.mark.slow
def test_a_body_over_the_limit_is_413(trees_dir):
    with make_client(trees_dir=trees_dir, max_request_bytes=2048) as client:
        answer = client.post("/retrieve", json={"query": "x" * 5000, "collection_name": "kw"})
        chunked = client.post("/retrieve", content=iter([b'{"query": "', b"x" * 5000, b'"}']),
                              headers={"content-type": "application/json"})
    assert answer.status_code == 413 and "2048" in answer.json()["detail"]
    assert chunked.status_code == 413


def test_every_answer_carries_a_request_id_and_echoes_a_given_one(client):
    assert len(client.get("/health").headers["x-request-id"]) == 32
    assert client.get("/health", headers={"X-Request-ID": "abc-1"}).headers["x-request-id"] == "abc-1"


def test_cors_allows_the_configured_origins(trees_dir):
    with make_client(trees_dir=trees_dir, cors_origins=["http://ui.example"]) as client:
        allowed = client.get("/health", headers={"Origin": "http://ui.example"})
        other = client.get("/health", headers={"Origin": "http://evil.example"})
    assert allowed.headers["access-control-allow-origin"] == "http://ui.example"
    assert "access-control-allow-origin" not in other.headers


def test_info_logs_name_no_query_text(client, caplog):
    caplog.set_level("INFO", logger="dashrag")
    client.post("/retrieve", json={"query": "secretive query words", "collection_name": "kw"})
    logged = [r for r in caplog.records if r.name == "dashrag.service.requests"]
    assert logged and logged[-1].path == "/retrieve" and logged[-1].status == 200
    assert "secretive" not in caplog.text
