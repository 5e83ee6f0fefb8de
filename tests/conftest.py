"""Shared fixtures: the shipped example corpus and a SciFact subset read from ../shared/data."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from tests.llm.openai_server import ScriptedOpenAIServer
from tests.retrievers.rerank_server import RerankServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_CORPUS = REPO / "examples" / "corpus"
SCIFACT = REPO.parent / "shared" / "data" / "scifact"


@pytest.fixture(scope="session")
def example_corpus():
    import dashrag

    return dashrag.Corpus.from_folder(EXAMPLE_CORPUS)


@pytest.fixture(scope="session")
def scifact_dir() -> Path:
    if not (SCIFACT / "corpus.jsonl.gz").is_file():
        pytest.fail(f"SciFact data missing at {SCIFACT} (the project reads it from ../shared/data)")
    return SCIFACT


@pytest.fixture(scope="session")
def scifact_subset_file(tmp_path_factory, scifact_dir) -> Path:
    """The first 400 SciFact documents as a BEIR corpus.jsonl (fast to fit, real text)."""
    path = tmp_path_factory.mktemp("scifact") / "corpus.jsonl"
    with gzip.open(scifact_dir / "corpus.jsonl.gz", "rt", encoding="utf-8") as src, open(path, "w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            if i == 400:
                break
            dst.write(line)
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def openai_server():
    """A real OpenAI-compatible server on loopback answering from a script (tests/llm/openai_server.py)."""
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def rerank_server():
    """A real TEI-style /rerank server on loopback (tests/retrievers/rerank_server.py)."""
    with RerankServer() as server:
        yield server
