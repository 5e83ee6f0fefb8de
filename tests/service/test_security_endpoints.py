"""The endpoint allow-list compares where a request really goes (issue 38, docs/security.md), through the
real server on loopback: a PostgreSQL URL whose connection parameters (``?port=``, ``?host=``,
``?hostaddr=``, ``?service=``, a Unix socket) lead away from the allowed server is refused, and the
server it would have reached (a loopback stand-in that asks libpq for the password) receives nothing;
an HTTP endpoint is compared after its path is normalised (``/team/../admin``, ``%2e%2e``)."""

from __future__ import annotations

import httpx
import pytest

from tests.fixtures.jobs import finished_job
from tests.service.test_security_trust_boundary import serve

PG_SECRET = "pg-allowed-password-91c2"
ALLOWED_PG = "postgresql+psycopg://127.0.0.1:5432/postgres"


def keyword_tree(url: str) -> dict:
    return {"component": "BM25Retriever", "params": {"top_k": 3, "index": {"component": "PgKeywordIndex", "params": {
        "url": url, "password": {"component": "EnvCredential", "params": {"var": "PGPASS"}}}}}}


def url_problem(answer: dict) -> str:
    return {e["path"]: e["message"] for e in answer["errors"]}.get("params.index.params.url", "")


@pytest.fixture
def pg_password(monkeypatch):
    monkeypatch.setenv("PGPASS", PG_SECRET)


def test_a_connection_parameter_leading_away_from_the_allowed_database_is_refused_and_it_gets_nothing(
        trees_copy, pg_password, password_collector):
    elsewhere = f"postgres@127.0.0.1:5432/postgres?port={password_collector.port}"
    with serve(trees_copy, allow_credentials=["PGPASS"], allow_endpoints=[ALLOWED_PG]) as server:
        built = httpx.post(f"{server.url}/trees", json={
            "name": "leak", "config": keyword_tree(f"postgresql+psycopg://{elsewhere}"), "corpus_path": "corpus"})
        if built.status_code == 202:  # what the unfixed service did: build, connect there, send the password
            finished_job(server.url, built.json()["job_id"], within_s=60)
    assert built.status_code == 422, built.text
    problem = {e["path"]: e["message"] for e in built.json()["detail"]}["params.index.params.url"]
    assert f"127.0.0.1:{password_collector.port}" in problem and "--allow-endpoint" in problem
    assert password_collector.connections == 0 and password_collector.passwords == []


@pytest.mark.parametrize("query, named", [
    ("host=127.0.0.2", "--allow-endpoint"),
    ("hostaddr=10.9.8.7", "--allow-endpoint"),
    ("host=127.0.0.1&host=10.9.8.7", "10.9.8.7"),
    ("dbname=other", "--allow-endpoint"),
    ("service=elsewhere", "service="),
    ("passfile=/etc/passwd", "passfile="),
    ("host=/var/run/postgresql", "Unix socket"),
    ("host=%40abstract", "Unix socket"),
])
def test_every_connection_parameter_naming_a_host_port_database_service_or_file_is_refused(
        trees_copy, pg_password, query, named):
    with serve(trees_copy, allow_credentials=["PGPASS"], allow_endpoints=[ALLOWED_PG]) as server:
        answer = httpx.post(f"{server.url}/trees/validate", json=keyword_tree(f"{ALLOWED_PG}?{query}")).json()
    assert answer["valid"] is False and named in url_problem(answer)


def test_the_allowed_database_itself_is_accepted_with_harmless_parameters(trees_copy, pg_password):
    with serve(trees_copy, allow_credentials=["PGPASS"], allow_endpoints=[ALLOWED_PG]) as server:
        answers = [httpx.post(f"{server.url}/trees/validate", json=keyword_tree(url)).json() for url in (
            ALLOWED_PG, "postgresql+psycopg://app@127.0.0.1/postgres?sslmode=prefer&application_name=dashrag",
            f"{ALLOWED_PG}?host=127.0.0.1&port=5432")]
    assert [url_problem(a) for a in answers] == ["", "", ""]


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/team/../admin", "/team/%2e%2e/admin", "/team/%2E%2E/admin", "/team/./../admin",
                                  "/team/..;/admin"])
def test_a_path_climbing_out_of_the_allowed_prefix_is_refused(trees_copy, recording_listener, path):
    listener = recording_listener()
    with serve(trees_copy, allow_endpoints=[f"{listener.url}/team"]) as server:
        def problem(api_base: str) -> str:
            tree = {"component": "HttpReranker", "params": {"api_base": api_base}}
            errors = httpx.post(f"{server.url}/trees/validate", json=tree).json()["errors"]
            return {e["path"]: e["message"] for e in errors}.get("params.api_base", "")

        climbing, staying = problem(f"{listener.url}{path}"), problem(f"{listener.url}/team/v1/../v2")
    assert "--allow-endpoint" in climbing and staying == ""
    assert listener.received == []


@pytest.mark.parametrize("url", ["http://evil.example\\@127.0.0.1:1/team", "http://127.0.0.1:1/team%2f..%2fadmin"])
def test_a_url_that_clients_read_differently_is_refused_naming_why(client, url):
    answer = client.post("/trees/validate", json={"component": "HttpReranker", "params": {"api_base": url}}).json()
    problems = {e["path"]: e["message"] for e in answer["errors"]}
    assert "read differently" in problems["params.api_base"] or "decode differently" in problems["params.api_base"]


def test_a_qdrant_url_without_a_port_is_compared_at_qdrant_clients_port(trees_copy):
    """qdrant-client sends ``http://host`` to port 6333, not 80: allowing ``http://host`` (port 80) allows nothing."""
    def tree(url: str) -> dict:
        return {"component": "DenseEmbeddingRetriever", "params": {"index": {
            "component": "QdrantVectorIndex", "params": {"url": url}}}}

    with serve(trees_copy, allow_endpoints=["http://qdrant.internal", "http://vectors.internal:6333"]) as server:
        def problem(url: str) -> str:
            errors = httpx.post(f"{server.url}/trees/validate", json=tree(url)).json()["errors"]
            return {e["path"]: e["message"] for e in errors}.get("params.index.params.url", "")

        at_80, at_6333 = problem("http://qdrant.internal"), problem("http://vectors.internal")
    assert "--allow-endpoint" in at_80 and at_6333 == ""
