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
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS, REPO

KEYWORD = json.loads((REPO / "components" / "keyword.json").read_text())
WHOLE_DOCUMENTS = {"component": "WholeDocumentChunker", "params": {}}


@pytest.fixture(scope="session")
def trees_dir(tmp_path_factory, scifact_subset_file) -> Path:
    trees = tmp_path_factory.mktemp("trees")
    work = tmp_path_factory.mktemp("work")
    dashrag.build(KEYWORD, EXAMPLE_CORPUS, work / "kw").save(trees / "kw")
    dashrag.build(KEYWORD, scifact_subset_file, work / "scifact", chunker=WHOLE_DOCUMENTS).save(trees / "scifact")
    return trees


@pytest.fixture
def trees_copy(trees_dir, tmp_path) -> Path:
    copy = tmp_path / "trees"
    shutil.copytree(trees_dir, copy)
    return copy


def make_client(**settings: Any) -> TestClient:
    return TestClient(create_app(ServiceSettings(**settings)), raise_server_exceptions=False)


@pytest.fixture
def client(trees_dir) -> Iterator[TestClient]:
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


@pytest.fixture
def loopback_server(trees_dir) -> Iterator[LoopbackServer]:
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_dir))) as server:
        yield server
