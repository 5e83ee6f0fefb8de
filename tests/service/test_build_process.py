"""What a build may use (docs/security.md): each build or update job runs in a worker process held to
``build_memory_mb`` of address space and killed at ``build_timeout_sec``, whatever stage it is in; it fails
with the limit it met and leaves nothing. Through the real server on loopback, with a real config that asks
for a lot (character n-grams 1..10, within the param bounds) on a generated corpus."""

from __future__ import annotations

import json
import random
from pathlib import Path

import httpx
import pytest

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.fixtures.jobs import finished_job
from tests.service.conftest import KEYWORD, LoopbackServer

GREEDY = {"component": "BM25Retriever", "params": {"vectorizer": {"component": "BagOfWordsConverter", "params": {
    "analyzer": "char", "ngram_min": 1, "ngram_max": 10}}}}


@pytest.fixture
def greedy_corpus(tmp_path) -> Path:
    """300 documents of 3,000 random letters: about nine million distinct character n-grams to count."""
    rng = random.Random(7)
    root = tmp_path / "data"
    root.mkdir()
    with open(root / "letters.jsonl", "w", encoding="utf-8") as out:
        for i in range(300):
            out.write(json.dumps({"_id": f"d{i}", "text": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ")
                                                                  for _ in range(3000))}) + "\n")
    return root


def build(trees: Path, data: Path, config: dict, corpus: str, **limits) -> tuple[dict, list[str]]:
    app = create_app(ServiceSettings(trees_dir=trees, data_root=data, **limits))
    with LoopbackServer(app) as server:
        accepted = httpx.post(f"{server.url}/trees", json={"name": "big", "config": config, "corpus_path": corpus})
        assert accepted.status_code == 202, accepted.text
        status = finished_job(server.url, accepted.json()["job_id"], within_s=300)
        listed = [t["name"] for t in httpx.get(f"{server.url}/trees").json()]
    return status, listed


@pytest.mark.slow
def test_a_build_over_build_memory_mb_is_stopped_and_leaves_nothing(trees_copy, greedy_corpus):
    status, listed = build(trees_copy, greedy_corpus, GREEDY, "letters.jsonl", build_memory_mb=700)
    assert status["status"] == "failed" and status["stage"] == "fitting", status
    assert status["error"] == "build stopped: over the memory limit of 700 MB"
    assert "big" not in listed and sorted(p.name for p in trees_copy.iterdir()) == ["kw", "scifact"]


@pytest.mark.slow
def test_a_build_over_build_timeout_sec_is_killed_even_in_a_stage_that_reports_nothing(trees_copy, greedy_corpus):
    """Counting the n-grams reports nothing until it ends (over 30 s here): the worker is killed at 5 s, in that
    stage (it reaches it ~2.4 s after the job starts, measured at load 13: docs/testing.md, "Ninth pass")."""
    status, listed = build(trees_copy, greedy_corpus, GREEDY, "letters.jsonl", build_memory_mb=1500,
                           build_timeout_sec=5)
    assert status["status"] == "failed" and status["error"] == "build stopped: over the time limit of 5 s", status
    assert status["stage"] == "fitting", status  # killed in the stage that reports nothing
    assert status["elapsed_s"] < 5 + 5
    assert "big" not in listed and sorted(p.name for p in trees_copy.iterdir()) == ["kw", "scifact"]


@pytest.mark.slow
def test_a_build_within_the_limits_is_built_in_its_worker(trees_copy):
    from tests.conftest import EXAMPLE_CORPUS

    status, listed = build(trees_copy, EXAMPLE_CORPUS.parent, KEYWORD, "corpus", build_memory_mb=2048,
                           build_timeout_sec=120)
    assert status["status"] == "done" and "big" in listed, status


def test_a_dense_build_without_onnxruntime_is_refused_before_its_model_loads(tmp_path, monkeypatch):
    """Its save exports the model to ONNX (onnxruntime): the job's build looks for the library first, so a user
    without the dense extra hears which extra to install in a second, not after the corpus was embedded. The
    worker's own build (``perform``), in this process with onnxruntime unimportable; the installed case, through
    ``dashrag serve`` and the CLI: tests/test_wheel.py."""
    import sys

    from dashrag.extras import missing_extra
    from dashrag.service.build_worker import perform
    from tests.conftest import EXAMPLE_CORPUS, REPO

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime fails, find_spec finds nothing
    semantic = json.loads((REPO / "components" / "semantic.json").read_text())
    stages: list[str] = []
    task = {"kind": "build", "corpus": str(EXAMPLE_CORPUS), "config": semantic, "out": str(tmp_path / "s"),
            "name": "s", "chunker": None, "cache_dir": str(tmp_path / "cache")}
    with pytest.raises(ModuleNotFoundError) as refused:
        perform(task, lambda stage, done=0, total=None: stages.append(stage))
    assert refused.value.name == "onnxruntime"
    assert "pip install 'dashrag[dense]' (missing: onnxruntime)" in str(missing_extra(refused.value, "this tree"))
    assert stages == ["reading the corpus"] and not (tmp_path / "s").exists()
