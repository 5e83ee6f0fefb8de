"""No error body shows where the server keeps things or which servers it talks to (docs/security.md): a 503
from a reranker that is down, a 503 from a tree that cannot be loaded, a failed job over a bad corpus file.
Through the real server on loopback."""

from __future__ import annotations

import shutil
import socket
import time

import httpx
import pytest

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.service.conftest import KEYWORD, LoopbackServer


@pytest.mark.slow
def test_no_error_body_holds_a_server_path_or_an_internal_url(trees_copy, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "bad.jsonl").write_text('{"_id": "a", "text": "x"}\n{not json\n', encoding="utf-8")
    shutil.copytree(trees_copy / "kw", trees_copy / "broken")
    for store in (trees_copy / "broken").rglob("*.sqlite"):
        store.write_bytes(b"not a database" * 100)
    with socket.socket() as probe:  # a loopback port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        internal = f"http://127.0.0.1:{probe.getsockname()[1]}"
    settings = ServiceSettings(trees_dir=trees_copy, data_root=data, reranker_url=internal, retrieval_score_floor=0.0)
    with LoopbackServer(create_app(settings)) as server:
        reranked = httpx.post(f"{server.url}/retrieve", json={"query": "bm25", "collection_name": "kw"})
        reloaded = httpx.post(f"{server.url}/trees/broken/reload")
        job = httpx.post(f"{server.url}/trees", json={"name": "b", "config": KEYWORD, "corpus_path": "bad.jsonl"})
        with httpx.Client(timeout=60) as client:  # one client for the wait (tests/fixtures/jobs.py)
            while (status := client.get(f"{server.url}/jobs/{job.json()['job_id']}")).json()["status"] in (
                    "queued", "running"):
                time.sleep(0.1)
    assert reranked.status_code == 503 and reranked.json()["detail"].startswith("rerank: HttpReranker")
    assert reloaded.status_code == 503 and "cannot read the store" in reloaded.text
    assert status.json()["error"] == "<data root>/bad.jsonl:2: not valid JSON (Expecting property name enclosed in " \
                                     "double quotes)"
    host_port = internal.removeprefix("http://")
    for answer in (reranked, reloaded, status):
        for hidden in (str(trees_copy), str(trees_copy.resolve()), str(data), str(tmp_path), host_port):
            assert hidden not in answer.text, (hidden, answer.text)
        assert '"/' not in answer.text and " /" not in answer.text, answer.text  # no absolute path at all
