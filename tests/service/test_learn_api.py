"""``POST /trees/{name}/learn`` (docs/finetuning.md, "From the service and the page"): the refusals before any work,
who may start it, and what deleting a tree takes with it, on a real loopback server. The job itself, its report and
files and the learned tree's build are read over HTTP from the job the page starts
(``tests/web/test_learn_form.py``: one learn job for both faces, docs/testing.md, "Tenth pass")."""

from __future__ import annotations

import json

import httpx
import pytest

import dashrag
from dashrag.presets import load_preset
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS
from tests.service.conftest import LoopbackServer


@pytest.fixture
def trees(tmp_path):
    """A trees folder of its own for each test, holding one keyword tree of the example corpus."""
    folder = tmp_path / "trees"
    dashrag.build_tree("keyword", EXAMPLE_CORPUS, folder / "docs")
    return folder


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
    """The learn job's folder (model, preset, report: written by the job in tests/web/test_learn_form.py; here its
    files as the job leaves them) goes with the tree, over HTTP, and nothing of the tree's is left aside."""
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
