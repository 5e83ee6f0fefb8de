"""``POST /trees/{name}/learn`` (docs/finetuning.md, "From the service and the page"): learning from a tree's own
documents without judgements, as a job on a real loopback server, with its report; the refusals before any work."""

from __future__ import annotations

import json
import time

import httpx
import pytest

import dashrag
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS, folder_digest
from tests.service.conftest import LoopbackServer

TINY = {"max_steps": 1, "max_seq_length": 64, "batch_size": 8, "time_budget_minutes": 20}


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    folder = tmp_path_factory.mktemp("learn") / "trees"
    dashrag.build_tree("keyword", EXAMPLE_CORPUS, folder / "docs")
    return folder


@pytest.mark.slow
def test_a_learn_job_reports_which_tree_it_chose_and_why_and_leaves_the_tree_alone(trees):
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees))) as server:
        before = folder_digest(trees / "docs")  # as the service left it on load (its score calibration cached)
        accepted = httpx.post(f"{server.url}/trees/docs/learn", json=TINY, timeout=60)
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        while (status := httpx.get(f"{server.url}/jobs/{job_id}", timeout=60).json())["status"] in ("queued",
                                                                                                   "running"):
            time.sleep(0.2)
        assert status["status"] == "done", status
        # the progress named the pipeline's steps as they ran (each one, however briefly it lasted)
        assert status["stages"][0] == "reading the corpus" and "learning: training" in status["stages"]
        assert status["stages"].index("learning: training") < status["stages"].index("learning: tuning the tree")
        report = status["report"]
        assert report["shipped"] in {"base", "learned"}
        assert (report["shipped"] == "learned") == (report["held_out"]["learned"] > report["held_out"]["base"])
        assert report["reason"].startswith("the learned tree scores")
        assert report["held_out"]["queries"] > 0 and set(report["held_out"]["dense_alone"]) == {"base", "learned"}
        assert report["training"]["steps"] == 1 and report["training"]["plan"]
        assert set(report["sources"]) == {"title", "heading", "held_out_sentence", "section_opening"}
        assert str(trees) not in json.dumps(report)  # no server path in what a client reads
        assert status["message"] == f"learned from docs's documents: the {report['shipped']} tree chosen"
        assert folder_digest(trees / "docs") == before  # learning reads the tree; it never changes it
    learned = trees / ".learned-docs"
    preset = json.loads((learned / "preset.json").read_text(encoding="utf-8"))
    assert preset["component"] == "ParallelRetriever"
    assert (learned / "model" / "dashrag-model-card.json").is_file()
    assert json.loads((learned / "report.json").read_text(encoding="utf-8"))["choice"]["shipped"] == report["shipped"]
    assert not list(trees.glob(".work-*"))  # the job's work folder (the exported documents, the store) is gone


def test_refusals_name_what_is_wrong_before_any_work(trees):
    settings = ServiceSettings(trees_dir=trees, build_timeout_sec=600)
    with LoopbackServer(create_app(settings)) as server:
        over = httpx.post(f"{server.url}/trees/docs/learn", json={"time_budget_minutes": 30}, timeout=60)
        assert over.status_code == 422 and "time_budget_minutes" in over.text and "at most 8 min" in over.text
        unknown = httpx.post(f"{server.url}/trees/nope/learn", json={}, timeout=60)
        assert unknown.status_code == 404
        stray = httpx.post(f"{server.url}/trees/docs/learn", json={"epochs": 3}, timeout=60)
        assert stray.status_code == 422 and "epochs" in stray.text
        outside = httpx.post(f"{server.url}/trees/docs/learn", json={"corpus_path": "../x", "time_budget_minutes": 5},
                             timeout=60)
        assert outside.status_code == 422 and "corpus_path" in outside.text and str(trees) not in outside.text
    assert not (trees / ".learned-nope").exists()
