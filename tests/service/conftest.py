"""Service fixtures: small real trees built once per session, apps over them, loopback servers.

The trees: ``kw`` (the ``keyword`` preset on examples/corpus, default chunker) and
``scifact`` (the ``keyword`` preset on the first 400 SciFact documents, whole
documents). Tests that change the trees folder copy it first (``trees_copy``).
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from fastapi.testclient import TestClient

import dashrag
from dashrag.core.factory import build_component
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS, REPO

ONNX = {"component": "MiniLMOnnxEmbedding", "params": {"max_seq_length": 128}}
KEYWORD = json.loads((REPO / "components" / "keyword.json").read_text())
WHOLE_DOCUMENTS = {"component": "WholeDocumentChunker", "params": {}}


@pytest.fixture(scope="session")
def trees_dir(tmp_path_factory, scifact_subset_file) -> Path:
    trees = tmp_path_factory.mktemp("trees")
    work = tmp_path_factory.mktemp("work")
    dashrag.build(KEYWORD, EXAMPLE_CORPUS, work / "kw").save(trees / "kw")
    dashrag.build(KEYWORD, scifact_subset_file, work / "scifact", chunker=WHOLE_DOCUMENTS).save(trees / "scifact")
    return trees


@pytest.fixture(scope="session")
def papers(tmp_path_factory):
    """An embedded Qdrant folder written by another program in the reference layout: collection ``papers``
    (one point per example document, payload chunk_id, text, source_id) and ``tiny`` (8-dimensional)."""
    from qdrant_client import QdrantClient, models

    storage = tmp_path_factory.mktemp("qdrant-served") / "storage"
    documents = [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(EXAMPLE_CORPUS.iterdir())]
    model = build_component(ONNX, "embedding")
    vectors = model.embed_documents([body for _, body in documents])
    client = QdrantClient(path=str(storage))
    client.create_collection("papers", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
    client.upsert("papers", points=[models.PointStruct(id=i, vector=v.tolist(), payload={
        "chunk_id": f"{name}#0", "text": body, "source_id": name}) for i, ((name, body), v)
        in enumerate(zip(documents, vectors))])
    client.create_collection("tiny", vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE))
    client.upsert("tiny", points=[models.PointStruct(id=1, vector=[1.0] * 8, payload={"text": "x"})])
    client.close()
    return storage, documents, vectors, model


@pytest.fixture
def trees_copy(trees_dir, tmp_path) -> Path:
    copy = tmp_path / "trees"
    shutil.copytree(trees_dir, copy)
    return copy


def make_client(**settings: Any) -> TestClient:
    return TestClient(create_app(ServiceSettings(**settings)), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def client(trees_dir) -> Iterator[TestClient]:
    """One app over the session's trees for a test file (its start-up loads the trees: a second or more each time).
    Its tests only read: a test that changes trees, settings or the app's state makes its own
    (``make_client``, ``trees_copy``)."""
    with make_client(trees_dir=trees_dir) as c:
        yield c


class LoopbackServer:
    """The app on a real uvicorn server on 127.0.0.1 (a port the OS picks), in a thread."""

    def __init__(self, app: Any):
        import uvicorn

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.socket.close()


@pytest.fixture(scope="session")
def served_by_default(trees_dir) -> Iterator[tuple[str, list[str]]]:
    """``dashrag serve --trees`` over the session's trees with the default settings, as a user starts it: its URL
    and its log lines up to "running on". One process for the tests that only read it (its start's log lines,
    queries), in tests/service/test_server.py and test_interpreter.py: each start is about 4 s of CPU. A test
    that sets other variables starts its own (``dashrag_serve``)."""
    from tests.service.test_server import dashrag_serve

    with dashrag_serve(trees_dir) as started:
        yield started


@pytest.fixture
def loopback_server(trees_dir) -> Iterator[LoopbackServer]:
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir))) as server:
        yield server
