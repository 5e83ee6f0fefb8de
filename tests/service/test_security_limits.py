"""The major and minor rules of docs/security.md over HTTP: strict JSON, limits by route and before the body
is read, no large echoes, paths and models inside what the operator opened, bounded configs and builds, no
secret in any URL, and the statuses of odd requests."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

import httpx
import pytest

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS
from tests.service.conftest import KEYWORD, LoopbackServer, make_client
from tests.service.test_trees_api import wait_for

RETRIEVE = {"query": "bm25", "collection_name": "kw"}


def bm25_over(index: dict) -> dict:
    return {"component": "BM25Retriever", "params": {"index": index}}


def problems(answer: httpx.Response) -> dict[str, str]:
    body = answer.json()
    found = body["errors"] if "errors" in body else body["detail"]
    return {e["path"]: e["message"] for e in found if "path" in e}


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_non_finite_number_in_a_json_body_is_a_422_not_a_500(client, number):
    for path, body in (("/retrieve", '{"query": "bm25", "collection_name": "kw", "limit": %s}'),
                       ("/trees/validate", '{"component": "BM25Retriever", "params": {"k1": %s}}'),
                       ("/trees", '{"name": "x", "config": {"component": "BM25Retriever", "params": {"k1": %s}}, '
                                  '"corpus_path": "corpus"}')):
        answer = client.post(path, content=body % number, headers={"content-type": "application/json"})
        assert answer.status_code == 422, (path, answer.text)
        assert answer.json()["detail"][0]["type"] == "json_invalid" and number.lstrip("-") in answer.text


def test_a_key_given_twice_in_a_json_body_is_refused(client):
    answer = client.post("/retrieve", content='{"query": "bm25", "collection_name": "kw", "limit": 5, "limit": 50}',
                         headers={"content-type": "application/json"})
    assert answer.status_code == 422 and "'limit' appears twice" in answer.text


@pytest.mark.slow
def test_a_json_route_sent_multipart_has_the_json_limit_not_the_upload_limit(trees_dir):
    with make_client(trees_dir=trees_dir) as client:  # defaults: 1 MiB JSON, 200 MiB upload
        answer = client.post("/retrieve", files={"query": ("q.txt", b"x" * (2 << 20), "text/plain")})
    assert answer.status_code == 413 and "for this route" in answer.json()["detail"]


def test_a_422_does_not_echo_a_large_input(client):
    answer = client.post("/retrieve", json={"query": ["x" * 500_000], "collection_name": "kw"})
    assert answer.status_code == 422 and len(answer.content) < 2_000
    assert "characters, not echoed" in answer.text


@pytest.mark.slow
def test_with_auth_a_body_is_refused_401_before_it_is_read(trees_dir, monkeypatch):
    """Headers announcing 150 MB of upload, and no body at all: the 401 comes at once, nothing is awaited."""
    monkeypatch.setenv("DASHRAG_TEST_TOKEN", "t0ken")
    app = create_app(ServiceSettings(trees_dir=trees_dir, auth_token_var="DASHRAG_TEST_TOKEN"))
    with LoopbackServer(app) as server:
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as raw:
            raw.sendall(b"POST /trees HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b"
                        b"\r\nContent-Length: 150000000\r\n\r\n")
            started = time.monotonic()
            head = raw.recv(4096)
        malformed = httpx.post(f"{server.url}/retrieve", content=b"{not json",
                               headers={"content-type": "application/json"})
    assert head.startswith(b"HTTP/1.1 401") and time.monotonic() - started < 5
    assert malformed.status_code == 401  # not a 422 that would tell an anonymous client how the body was read


@pytest.mark.slow
@pytest.mark.parametrize("path", ["../../escaped", "/tmp/escaped", "a/../../escaped", "~/escaped"])
def test_a_storage_path_outside_the_trees_folder_is_refused(trees_copy, path):
    tree = bm25_over({"component": "QdrantKeywordIndex", "params": {"path": path}})
    with make_client(trees_dir=trees_copy, data_root=EXAMPLE_CORPUS.parent) as client:
        validated = client.post("/trees/validate", json=tree)
        built = client.post("/trees", json={"name": "escape", "config": tree, "corpus_path": "corpus"})
    assert "leaves the tree's folder" in problems(validated)["params.index.params.path"]
    assert built.status_code == 422 and "leaves the tree's folder" in built.text
    assert not (trees_copy.parent / "escaped").exists() and not [p for p in trees_copy.iterdir() if "escape" in p.name]


def test_a_storage_path_inside_the_trees_folder_is_accepted(client):
    tree = bm25_over({"component": "QdrantKeywordIndex", "params": {"path": "qdrant/bm25"}})
    assert "params.index.params.path" not in problems(client.post("/trees/validate", json=tree))


def test_a_model_folder_outside_the_data_root_is_refused(trees_dir, tmp_path):
    outside = tmp_path / "model"
    outside.mkdir()
    tree = {"component": "DenseEmbeddingRetriever", "params": {
        "embedding": {"component": "SentenceTransformerEmbedding", "params": {"model": str(outside)}}}}
    with make_client(trees_dir=trees_dir, data_root=EXAMPLE_CORPUS.parent) as client:
        answer = client.post("/trees/validate", json=tree)
    assert "outside the data root" in problems(answer)["params.embedding.params.model"]


@pytest.mark.parametrize(("tree", "path"), [
    ({"component": "BM25Retriever", "params": {"vectorizer": {"component": "BagOfWordsConverter",
                                                              "params": {"ngram_max": 1000}}}},
     "params.vectorizer.params.ngram_max"),
    ({"component": "BM25Retriever", "params": {"top_k": 10_000_000}}, "params.top_k"),
    ({"component": "HttpReranker", "params": {"batch_size": 1_000_000}}, "params.batch_size"),
    ({"component": "HttpReranker", "params": {"max_workers": 10_000}}, "params.max_workers"),
])
def test_a_config_asking_for_unbounded_work_is_refused_with_its_bound(client, tree, path):
    assert "less than or equal to" in problems(client.post("/trees/validate", json=tree))[path]


@pytest.mark.slow
def test_builds_beyond_max_pending_builds_are_429(trees_copy):
    with make_client(trees_dir=trees_copy, data_root=EXAMPLE_CORPUS.parent, max_pending_builds=1) as client:
        first = client.post("/trees", json={"name": "one", "config": KEYWORD, "corpus_path": "corpus"})
        second = client.post("/trees", json={"name": "two", "config": KEYWORD, "corpus_path": "corpus"})
        assert first.status_code == 202
        while client.get(f"/jobs/{first.json()['job_id']}").json()["status"] in ("queued", "running"):
            time.sleep(0.1)
    assert second.status_code == 429 and "try again" in second.json()["detail"]


def note(i: int) -> dict:
    return {"documents": [{"id": f"notes/{i}.txt", "text": f"note {i} on sparse retrieval"}]}


@pytest.mark.slow
def test_document_jobs_and_removals_count_against_max_pending_builds(trees_copy):
    """One limit for every job kind: document posts queue like builds, and a removal or a build beyond it is a 429."""
    with make_client(trees_dir=trees_copy, data_root=EXAMPLE_CORPUS.parent, max_pending_builds=2) as client:
        posts = [client.post("/trees/kw/documents", json=note(i)) for i in range(3)]
        removal = client.delete("/trees/kw/documents/bm25.md")
        build = client.post("/trees", json={"name": "other", "config": KEYWORD, "corpus_path": "corpus"})
        ended = [wait_for(client, p.json()["job_id"])["status"] for p in posts[:2]]
        after = client.post("/trees/kw/documents", json=note(3))  # room again once they ended
        wait_for(client, after.json()["job_id"])
    assert [p.status_code for p in posts] == [202, 202, 429] and ended == ["done", "done"]
    assert "max_pending_builds = 2" in posts[2].json()["detail"] and posts[2].headers["retry-after"] == "10"
    assert removal.status_code == 429 and build.status_code == 429 and after.status_code == 202
    assert not (trees_copy / "other").exists()


@pytest.mark.slow
def test_an_upload_beyond_the_queued_upload_budget_is_429_and_not_written(trees_copy):
    text = ("sparse retrieval " * 200).encode()  # 3,400 bytes
    with make_client(trees_dir=trees_copy, max_queued_upload_bytes=4096) as client:
        first = client.post("/trees/kw/documents", files=[("corpus", ("a.txt", text, "text/plain"))])
        second = client.post("/trees/kw/documents/upload", files=[("corpus", ("b.txt", text, "text/plain"))])
        uploads_while_queued = sorted(p.name for p in trees_copy.glob(".upload-*"))
        status = wait_for(client, first.json()["job_id"])
        third = client.post("/trees/kw/documents", files=[("corpus", ("b.txt", text, "text/plain"))])
        wait_for(client, third.json()["job_id"])
    assert first.status_code == 202 and status["status"] == "done" and third.status_code == 202
    assert second.status_code == 429 and "max_queued_upload_bytes = 4096" in second.json()["detail"]
    assert uploads_while_queued == [f".upload-{first.json()['job_id']}"]  # the refused one was never written


@pytest.mark.parametrize(("tree", "path"), [
    ({"component": "HttpReranker", "params": {"api_base": "http://user:hunter2@rerank.internal"}}, "params.api_base"),
    ({"component": "HttpReranker", "params": {"api_base": "http://rerank.internal/?api_key=hunter2"}},
     "params.api_base"),
    (bm25_over({"component": "PgKeywordIndex", "params": {
        "url": "postgresql+psycopg://app@127.0.0.1:5432/db?password=hunter2"}}), "params.index.params.url"),
    (bm25_over({"component": "QdrantKeywordIndex", "params": {"url": "http://qdrant:6333/?api-key=hunter2"}}),
     "params.index.params.url"),
])
def test_a_url_holding_a_secret_is_refused_and_the_secret_is_not_echoed(client, tree, path):
    answer = client.post("/trees/validate", json=tree)
    assert "holds a" in problems(answer)[path] and "hunter2" not in answer.text


def test_a_store_url_with_a_password_in_its_query_is_shown_without_it():
    from dashrag.store.store import display_url

    shown = display_url("postgresql+psycopg://app:pw1@db/x?password=hunter2&sslmode=require")
    assert "hunter2" not in shown and "pw1" not in shown and "sslmode=require" in shown


def test_a_post_to_no_route_is_404(client):
    answer = client.post("/no-such-route", json={})
    assert answer.status_code == 404 and "no route" in answer.json()["detail"]


@pytest.mark.slow
def test_with_auth_the_openapi_document_stays_open_and_holds_no_setting(trees_dir, monkeypatch):
    """Decided (docs/security.md): /openapi.json and /docs describe routes and shapes, no data; a client needs
    them to learn how to authenticate. What must not be in them: the token, or any variable's value."""
    monkeypatch.setenv("DASHRAG_TEST_TOKEN", "t0ken-value")
    with make_client(trees_dir=trees_dir, auth_token_var="DASHRAG_TEST_TOKEN") as client:
        document, docs = client.get("/openapi.json"), client.get("/docs")
    assert document.status_code == docs.status_code == 200
    assert "t0ken-value" not in document.text and "bearer" in json.dumps(document.json()).lower()


@pytest.mark.slow
def test_a_build_past_build_timeout_sec_fails_and_leaves_nothing(trees_copy):
    with make_client(trees_dir=trees_copy, data_root=EXAMPLE_CORPUS.parent, build_timeout_sec=1e-6) as client:
        job = client.post("/trees", json={"name": "slow", "config": KEYWORD, "corpus_path": "corpus"}).json()
        while (status := client.get(f"/jobs/{job['job_id']}").json())["status"] in ("queued", "running"):
            time.sleep(0.05)
        listed = [t["name"] for t in client.get("/trees").json()]
    assert status["status"] == "failed" and "over the time limit of 1e-06 s" in status["error"]
    assert "slow" not in listed and sorted(p.name for p in trees_copy.iterdir()) == ["kw", "scifact"]


@pytest.mark.slow
@pytest.mark.parametrize("chunked", [False, True])
def test_a_client_that_writes_its_whole_body_first_reads_the_413(trees_dir, chunked):
    """Python's urllib sends all of a body before it reads the answer: the server drains the refused body (bounded)
    so the 413 reaches it, where closing at once reset the connection."""
    body = b"{" + b" " * (32 << 20) + b"}"  # 32 MiB against the 1 MiB JSON limit: more than socket buffers hold
    data = iter([body[i:i + 65536] for i in range(0, len(body), 65536)]) if chunked else body
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir))) as server:
        request = urllib.request.Request(f"{server.url}/retrieve", data=data, method="POST",
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        healthy = httpx.get(f"{server.url}/health").status_code
    assert refused.value.code == 413 and "larger than the limit of 1048576 bytes" in refused.value.read().decode()
    assert healthy == 200
