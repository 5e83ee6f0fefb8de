"""``POST /trees/{name}/learn`` (docs/finetuning.md, "From the service and the page"): learning from a tree's own
documents without judgements, as a job on a real loopback server, with its report; the refusals before any work."""

from __future__ import annotations

import json

import httpx
import pytest

import dashrag
from dashrag.presets import load_preset
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS, folder_digest
from tests.fixtures.jobs import finished_job
from tests.service.conftest import LoopbackServer

# The smallest job the service accepts (models.LearnRequest: 8 tokens, 2 pairs a batch): a training step of MiniLM at
# 64 tokens and 8 pairs costs about 4 s of CPU, and the job runs three (the step probe's warm-up and timed step, then
# the step itself); what is asserted is the job and its report, not what one step learns (docs/testing.md).
TINY = {"max_steps": 1, "max_seq_length": 8, "batch_size": 2, "time_budget_minutes": 20}


@pytest.fixture
def trees(tmp_path):
    """A trees folder of its own for each test: the learn job's test ends by deleting the tree it learned from."""
    folder = tmp_path / "trees"
    dashrag.build_tree("keyword", EXAMPLE_CORPUS, folder / "docs")
    return folder


@pytest.mark.slow
def test_a_learn_job_reports_which_tree_it_chose_and_why_and_leaves_the_tree_alone(trees):
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees))) as server:
        before = folder_digest(trees / "docs")  # as the service left it on load (its score calibration cached)
        accepted = httpx.post(f"{server.url}/trees/docs/learn", json=TINY, timeout=60)
        assert accepted.status_code == 202, accepted.text
        status = finished_job(server.url, accepted.json()["job_id"], every=0.2)
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
    use_the_learned_tree_then_delete_both(trees, report["shipped"])


def use_the_learned_tree_then_delete_both(trees, shipped: str) -> None:
    """After the learn job above (its .learned-docs): the new tree built from its preset answers, keeps answering
    once the tree it learned from is deleted (its own copy of the model), and each tree's folders go with it."""
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees))) as server:
        taken = httpx.post(f"{server.url}/trees/docs/learned/build", json={"name": "docs"}, timeout=60)
        assert taken.status_code == 409 and "docs" in taken.json()["detail"]
        accepted = httpx.post(f"{server.url}/trees/docs/learned/build", json={"name": "learned"}, timeout=60)
        assert accepted.status_code == 202, accepted.text
        assert finished_job(server.url, accepted.json()["job_id"], every=0.2)["status"] == "done"
        assert (trees / ".models-learned").is_dir() == (shipped == "learned")  # the base names no learned model
        assert httpx.delete(f"{server.url}/trees/docs", timeout=60).status_code == 204
        assert not (trees / "docs").exists() and not (trees / ".learned-docs").exists()
        answer = httpx.post(f"{server.url}/trees/learned/query", json={"query": "retrieval"}, timeout=60)
        assert answer.status_code == 200 and answer.json()["chunks"], answer.text
        assert httpx.delete(f"{server.url}/trees/learned", timeout=60).status_code == 204
        assert not (trees / "learned").exists() and not (trees / ".models-learned").exists()
        assert not list(trees.glob(".deleted-*")) and not list(trees.glob(".upload-*"))


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
        nothing_learned = httpx.post(f"{server.url}/trees/docs/learned/build", json={"name": "new"}, timeout=60)
        assert nothing_learned.status_code == 404 and "learn job" in nothing_learned.json()["detail"]
        bad_name = httpx.post(f"{server.url}/trees/docs/learned/build", json={"name": "../x"}, timeout=60)
        assert bad_name.status_code == 422 and "name" in bad_name.text
    assert not (trees / ".learned-nope").exists() and not (trees / "new").exists()


def test_deleting_a_tree_deletes_what_was_learned_from_it(tmp_path):
    """The learn job's folder (model, preset, report: written by the slow test above; here its files as the job
    leaves them) goes with the tree, over HTTP, and nothing of the tree's is left aside."""
    trees = tmp_path / "trees"
    dashrag.build_tree("keyword", EXAMPLE_CORPUS, trees / "gone")
    learned = trees / ".learned-gone"
    (learned / "model").mkdir(parents=True)
    (learned / "preset.json").write_text(json.dumps(load_preset("keyword")), encoding="utf-8")
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees))) as server:
        assert httpx.get(f"{server.url}/trees", timeout=60).json()[0]["name"] == "gone"  # the hidden folder is none
        assert httpx.delete(f"{server.url}/trees/gone", timeout=60).status_code == 204
        assert httpx.get(f"{server.url}/trees", timeout=60).json() == []
    assert sorted(p.name for p in trees.iterdir()) == []


def test_only_a_caller_who_may_build_may_learn_or_build_the_learned_tree(trees, monkeypatch):
    """Both routes start work in the operator's name (a worker process, files beside the trees), so they are held as
    a build is (docs/security.md): another origin's page is refused, and so is a caller without the token; nothing
    starts."""
    monkeypatch.setenv("DASHRAG_TEST_TOKEN", "t0ken")
    learned = trees / ".learned-docs"
    learned.mkdir()
    (learned / "preset.json").write_text(json.dumps(load_preset("keyword")), encoding="utf-8")
    settings = ServiceSettings(trees_dir=trees, auth_token_var="DASHRAG_TEST_TOKEN")
    token = {"Authorization": "Bearer t0ken"}
    requests = [("/trees/docs/learn", {"max_steps": 1, "time_budget_minutes": 5}),
                ("/trees/docs/learned/build", {"name": "taken_by_nobody"})]
    with LoopbackServer(create_app(settings)) as server:
        for path, body in requests:
            foreign = httpx.post(f"{server.url}{path}", json=body, timeout=60,
                                 headers={**token, "Origin": "http://evil.example"})
            assert foreign.status_code == 403 and foreign.json()["detail"].startswith("cross-origin"), path
            anonymous = httpx.post(f"{server.url}{path}", json=body, timeout=60)
            assert anonymous.status_code == 401 and "t0ken" not in anonymous.text, path
    assert sorted(p.name for p in trees.iterdir()) == [".learned-docs", "docs"]  # no job folder, no new tree
    assert not (trees / ".models-taken_by_nobody").exists()
