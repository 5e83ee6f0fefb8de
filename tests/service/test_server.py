"""The real server: uvicorn on a loopback port, and ``dashrag serve`` as a user starts it."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator

import httpx
import pytest

from tests.conftest import SCIFACT

QUERY = "how does BM25 saturate term frequency"


def scifact_queries(n: int) -> list[str]:
    lines = (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines[:n]]


def test_the_real_server_answers_retrieve_and_health(loopback_server):
    with httpx.Client(base_url=loopback_server.url) as http:
        assert http.get("/health").json() == {"service": "rag_service", "status": "ok"}
        answer = http.post("/retrieve", json={"query": QUERY, "collection_name": "kw"})
        empty = http.post("/retrieve", json={"query": " ", "collection_name": "kw"})
    assert answer.status_code == 200 and answer.json()["context_chunks"][0]["source_id"] == "bm25.md"
    assert empty.status_code == 422


@pytest.mark.slow
def test_sixteen_concurrent_clients_get_exactly_the_answers_of_one_at_a_time(loopback_server):
    queries = scifact_queries(16 * 50)
    bodies = [{"query": q, "collection_name": "scifact", "user_collection_name": "kw" if i % 3 == 0 else None,
               "limit": 5 + i % 10, "trace": False} for i, q in enumerate(queries)]
    with httpx.Client(base_url=loopback_server.url) as http:
        alone = [http.post("/retrieve", json=b).json() for b in bodies]

    def client_run(worker: int) -> list[tuple[int, dict]]:
        with httpx.Client(base_url=loopback_server.url) as http:
            mine = range(worker, len(bodies), 16)
            return [(i, http.post("/retrieve", json=bodies[i]).json()) for i in mine]

    with ThreadPoolExecutor(16) as pool:
        together = dict(pair for part in pool.map(client_run, range(16)) for pair in part)
    assert len(together) == 800
    assert [together[i] for i in range(len(bodies))] == alone
    assert sum(bool(a["context_chunks"]) for a in alone) > 100  # the answers are not all empty


@contextmanager
def dashrag_serve(trees_dir, **env_vars: str) -> Iterator[tuple[str, list[str]]]:
    """``dashrag serve --trees`` as a user starts it, on a free port: its URL and its log lines up to "running on"."""
    level = {} if "LOG_LEVEL" in env_vars else {"RAG_LOG_LEVEL": "INFO"}
    env = {**os.environ, "RAG_PORT": "0", **level, **env_vars}
    command = [sys.executable, "-m", "dashrag.cli.main", "serve", "--trees", str(trees_dir)]
    with announced_server(command, env) as started:
        yield started


@contextmanager
def announced_server(command: list[str], env: dict[str, str], cwd=None) -> Iterator[tuple[str, list[str]]]:
    """A server process that logs "running on <url>" on stderr: its URL and its log lines up to that one;
    stopped with SIGINT (a user's Ctrl-C) on the way out."""
    process = subprocess.Popen(command, env=env, cwd=cwd, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)

    threading.Thread(target=read_stderr, daemon=True).start()
    try:
        url, seen = None, []
        while url is None:
            seen.append(lines.get(timeout=60))
            match = re.search(r"running on (http://127\.0\.0\.1:\d+)", seen[-1])
            url = match.group(1) if match else None
        yield url, seen
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)


@pytest.mark.slow
def test_dashrag_serve_starts_on_a_free_port_and_serves_the_trees(served_by_default):
    url, seen = served_by_default
    assert json.loads(seen[-1])["level"] == "INFO"  # structured logs
    answer = httpx.post(f"{url}/retrieve", json={"query": QUERY, "collection_name": "kw"})
    assert answer.status_code == 200 and answer.json()["citations"] == ["bm25.md"]


def blas_threads_logged(seen: list[str]) -> str:
    return next(json.loads(line)["message"] for line in seen if "BLAS threads" in line)


@pytest.mark.slow
def test_dashrag_serve_runs_blas_on_one_thread_by_default(served_by_default):
    _, seen = served_by_default
    assert blas_threads_logged(seen) == "BLAS threads: openblas 1"


@pytest.mark.slow
def test_rag_blas_threads_0_leaves_blas_one_thread_per_core(trees_dir):
    with dashrag_serve(trees_dir, RAG_BLAS_THREADS="0", OPENBLAS_NUM_THREADS="2") as (_, seen):
        assert blas_threads_logged(seen) == "BLAS threads: openblas 2"


@pytest.mark.slow
def test_a_json_body_sent_without_its_content_type_is_a_422_naming_the_content_type_expected(loopback_server):
    body = json.dumps({"query": QUERY, "collection_name": "kw"})
    with httpx.Client(base_url=loopback_server.url) as http:
        as_curl_d = http.post("/retrieve", content=body, headers={"content-type": "application/x-www-form-urlencoded"})
        bare = http.post("/retrieve", content=body)
        right = http.post("/retrieve", content=body, headers={"content-type": "application/json"})
    assert as_curl_d.status_code == 422 and bare.status_code == 422 and right.status_code == 200
    (problem,) = as_curl_d.json()["detail"]
    assert problem["msg"].startswith("the body must be JSON sent with content-type: application/json (received "
                                     "content-type application/x-www-form-urlencoded;")
    assert "received no content-type" in bare.json()["detail"][0]["msg"]
