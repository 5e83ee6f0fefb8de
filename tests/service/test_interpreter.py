"""The event loop under load (docs/security.md): what keeps ``/health`` answering while queries run.

The latency itself is machine-dependent and measured by ``bench/bench_filter_bounds.py``; these tests assert
the mechanism: ``dashrag serve`` freezes its loaded heap and shortens the switch interval (read from its
start-up log), and the event loop neither parses a large body nor encodes a query's answer (the thread that
does it, recorded through the real server).
"""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from dashrag.service import json_body
from dashrag.service.models import TreeQueryResponse

QUERIES = ["retrieval", "vector search", "evaluation metrics", "chunk size"]


def filtered(file_type: str, padding: int = 300) -> dict:
    """An ``$or`` of ``padding`` paths no document has and the one term that selects: the answer is the
    documents of ``file_type``, the work that of a large filter."""
    return {"$or": [{"path": f"none-{i}.md"} for i in range(padding)] + [{"file_type": file_type}]}


def tuned_interpreter(seen: list[str]) -> tuple[float, int]:
    message = next(json.loads(line)["message"] for line in seen if "switch interval" in line)
    match = re.fullmatch(r"switch interval ([\d.]+) ms; (\d+) objects frozen", message)
    assert match, message
    return float(match.group(1)), int(match.group(2))


def test_dashrag_serve_freezes_its_loaded_heap_and_hands_the_gil_over_every_millisecond(served_by_default):
    url, seen = served_by_default
    switch_ms, frozen = tuned_interpreter(seen)
    # the heap frozen once the trees are loaded: the imports alone are tens of thousands of objects
    assert switch_ms == 1.0 and frozen > 20_000
    # queries still answer (a frozen object is still freed by reference counting, and found by lookups)
    answer = httpx.post(f"{url}/trees/kw/query", json={"query": "bm25", "top_k": 2})
    assert answer.status_code == 200 and answer.json()["chunks"][0]["document_id"] == "bm25.md"


@pytest.fixture
def thread_log(monkeypatch) -> list[tuple[str, threading.Thread]]:
    """The threads that parse request bodies and encode ``/trees/{name}/query`` answers, through the real
    functions (recorded, then called)."""
    seen: list[tuple[str, threading.Thread]] = []
    parse, encode = json_body.strict_loads, TreeQueryResponse.model_dump_json

    def parsed(*args, **kwargs):
        seen.append(("parse", threading.current_thread()))
        return parse(*args, **kwargs)

    def encoded(self, *args, **kwargs):
        seen.append(("encode", threading.current_thread()))
        return encode(self, *args, **kwargs)

    monkeypatch.setattr(json_body, "strict_loads", parsed)
    monkeypatch.setattr(TreeQueryResponse, "model_dump_json", encoded)
    return seen


def test_a_large_body_is_parsed_and_the_answer_encoded_off_the_event_loop(loopback_server, thread_log):
    body = {"query": "retrieval", "filters": filtered("txt", padding=900)}
    assert len(json.dumps(body)) >= json_body.OFF_LOOP_BYTES
    with httpx.Client(base_url=loopback_server.url) as http:
        answer = http.post("/trees/kw/query", json=body)
    assert answer.status_code == 200, answer.text
    assert {c["metadata"]["file_type"] for c in answer.json()["chunks"]} == {"txt"}
    loop = loopback_server.thread  # uvicorn's event loop runs in it
    assert [step for step, _ in thread_log] == ["parse", "encode"]
    assert all(thread is not loop for _, thread in thread_log)


def test_a_large_body_still_refuses_a_key_given_twice(loopback_server):
    padding = "x" * json_body.OFF_LOOP_BYTES
    raw = f'{{"query": "{padding}", "top_k": 3, "top_k": 4}}'
    answer = httpx.post(f"{loopback_server.url}/trees/kw/query", content=raw,
                        headers={"content-type": "application/json"})
    assert answer.status_code == 422 and answer.json()["detail"][0]["type"] == "json_invalid"
    assert "'top_k' appears twice" in answer.text


def test_health_answers_while_filtered_queries_run_and_the_answers_are_those_asked_alone(loopback_server):
    bodies = [{"query": q, "top_k": 3, "trace": False, "filters": filtered(t)} for q in QUERIES for t in ("md", "txt")]
    with httpx.Client(base_url=loopback_server.url) as http:
        alone = [http.post("/trees/kw/query", json=b).json()["chunks"] for b in bodies]

    def post(body: dict) -> list[dict]:
        with httpx.Client(base_url=loopback_server.url, timeout=60) as http:
            return http.post("/trees/kw/query", json=body).json()["chunks"]

    with ThreadPoolExecutor(4) as pool, httpx.Client(base_url=loopback_server.url, timeout=60) as probe:
        running = pool.map(post, bodies)
        health = [probe.get("/health").status_code for _ in range(10)]
        together = list(running)
    assert health == [200] * 10
    assert together == alone
    answered = [json.dumps(a) for a in alone if a]
    assert len(answered) >= 4 and len(set(answered)) == len(answered)  # not all empty, each its own
