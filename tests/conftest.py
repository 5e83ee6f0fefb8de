"""Session set-up for every test: offline model hubs, the example corpus, the shared fixture plugins."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_CORPUS = REPO / "examples" / "corpus"
SCIFACT = REPO.parent / "shared" / "data" / "scifact"

# Shared fixtures live in tests/fixtures/ and are plugins, so a test names them without importing them.
pytest_plugins = ["tests.fixtures.scifact", "tests.fixtures.models"]


@pytest.fixture(scope="session")
def example_corpus():
    import dashrag

    return dashrag.Corpus.from_folder(EXAMPLE_CORPUS)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@contextmanager
def local_postgres():
    """A real PostgreSQL + pgvector server on 127.0.0.1 (``dashrag pg start``), always stopped and removed.

    Its data folder is under /tmp with mode 755 so that the unprivileged user the
    server runs as (when the tests run as root) can enter it.
    """
    from dashrag.engines import local_postgres as servers

    root = Path(tempfile.mkdtemp(prefix="dashrag-test-pg-"))
    root.chmod(0o755)
    try:
        server = servers.start(root / "data")
        try:
            yield server.url
        finally:
            servers.stop(root / "data")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_url():
    """One PostgreSQL server for the session (started on first use, stopped at the end)."""
    with local_postgres() as url:
        yield url


@pytest.fixture(scope="session")
def pg_url_second():
    """A second server on another loopback port (the sharding tests)."""
    with local_postgres() as url:
        yield url
