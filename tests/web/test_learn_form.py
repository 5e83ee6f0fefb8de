"""The documents panel's "Learn from these documents" form (issue 41): it starts the learn job on the tree's own
documents, shows its progress, then the report: the tree kept and why, the held-out figures, the plan; all as text.
The same job read over HTTP (``POST /trees/{name}/learn``'s job, docs/finetuning.md, "From the service and the
page"): its stages and report, the files it leaves, and the learned tree's life over the API. Real server,
Chromium."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest

import dashrag
from tests.conftest import EXAMPLE_CORPUS, folder_digest
from tests.fixtures.jobs import finished_job
from tests.web.conftest import Server, serving, watched_page

HOSTILE = '<img src=x onerror="window.hacked=1">Okapi'


@pytest.fixture(scope="module")
def learn_server(tmp_path_factory) -> Iterator[Server]:
    """A server over one tree built from the example corpus and a document whose title holds markup."""
    root = tmp_path_factory.mktemp("learn-server")
    corpus = root / "corpus"
    corpus.mkdir()
    for path in EXAMPLE_CORPUS.iterdir():
        (corpus / path.name).write_bytes(path.read_bytes())
    (corpus / "hostile.md").write_text(f"# {HOSTILE}\n\nOkapi weighting saturates term frequency. "
                                       "Its k1 parameter sets how fast the saturation comes.\n", encoding="utf-8")
    dashrag.build_tree("keyword", corpus, root / "trees" / "docs")
    with serving(root / "trees", data_root=root) as url:
        yield Server(url, root / "trees")


@pytest.mark.slow  # a training job (one step, 8 tokens) in a real browser: a minute or two on shared cores
def test_the_learn_form_runs_the_job_and_shows_which_tree_it_kept_and_why(browser, learn_server, problems):
    """One learn job for both faces: what the page shows, then the same job's status, report and files over HTTP
    (each learn job is a worker importing the trainer's libraries, then a dense build: docs/testing.md, "Tenth
    pass")."""
    trees = learn_server.trees
    with watched_page(browser, problems) as page:
        page.goto(learn_server.url + "/")
        page.get_by_role("button", name="Query saved trees").click()
        page.locator('li[data-tree="docs"]').get_by_role("button", name="Documents").click()
        form = page.locator('.documents-panel[data-tree="docs"] .documents-learn')
        form.get_by_label("Time budget (minutes)").fill("20")
        form.get_by_label("At most this many training steps").fill("1")
        form.get_by_label("Tokens per text").fill("8")  # the least the form takes: the step's cost (docs/testing.md)
        before = folder_digest(trees / "docs")  # as the service left it on load (its score calibration cached)
        with page.expect_response(lambda r: r.url.endswith("/trees/docs/learn")) as learn:
            form.get_by_role("button", name="Learn from these documents").click()
        assert learn.value.status == 202, learn.value.text()
        form.locator('.job[data-status="running"]').wait_for(timeout=60_000)  # progress shows while it runs
        report = form.locator(".learn-report")
        report.wait_for(timeout=600_000)
        shipped = report.get_attribute("data-shipped")
        assert shipped in {"base", "learned"}
        assert report.locator('[role="status"]').inner_text().startswith(f"The {shipped} tree was kept")
        assert report.locator(".learn-reason").inner_text().startswith("the learned tree scores")
        cells = report.locator(".learn-figures td").all_inner_texts()
        assert len(cells) == 4 and all(re.fullmatch(r"\d\.\d{4}", cell) for cell in cells)
        assert re.match(r"1 training steps over \d+ pairs; [\d.]+ of the 20\.0 minutes\.",
                        report.locator("p").nth(2).inner_text())
        report.locator("summary").click()
        assert report.locator("li").count() >= 2  # the plan's reasons, in words
        assert page.locator(".documents-panel img").count() == 0 and page.evaluate("window.hacked") is None
        assert folder_digest(trees / "docs") == before  # learning reads the tree; it never changes it
        the_job_over_http(learn_server, learn.value.json()["job_id"], shipped)
        # "use the learned tree": a new tree from what the job kept, built and listed beside the others
        use = form.locator(".learn-use")
        use.get_by_label("Name of the new tree").fill("docs-learned")
        label = "Use the learned tree" if shipped == "learned" else "Build the base tree it kept"
        use.get_by_role("button", name=label).click()
        built = use.locator('.learn-use-job[data-status="done"]')
        built.wait_for(timeout=300_000)
        assert built.inner_text() == "Built the tree docs-learned: it is listed with the saved trees."
        page.locator('li[data-tree="docs-learned"]').wait_for(timeout=30_000)
    use_the_learned_tree_then_delete_both(learn_server, "docs-learned", shipped)


def the_job_over_http(server: Server, job_id: str, shipped: str) -> None:
    """The page's learn job as a client of the API reads it: the pipeline's steps as they ran, the report the page
    showed, no server path in it; and the files it left beside the tree (was ``tests/service/test_learn_api.py``'s
    own job)."""
    status = finished_job(server.url, job_id)
    assert status["status"] == "done", status
    # the progress named the pipeline's steps as they ran (each one, however briefly it lasted)
    assert status["stages"][0] == "reading the corpus" and "learning: training" in status["stages"]
    assert status["stages"].index("learning: training") < status["stages"].index("learning: tuning the tree")
    report = status["report"]
    assert report["shipped"] == shipped
    assert (report["shipped"] == "learned") == (report["held_out"]["learned"] > report["held_out"]["base"])
    assert report["reason"].startswith("the learned tree scores")
    assert report["held_out"]["queries"] > 0 and set(report["held_out"]["dense_alone"]) == {"base", "learned"}
    assert report["training"]["steps"] == 1 and report["training"]["plan"]
    assert set(report["sources"]) == {"title", "heading", "held_out_sentence", "section_opening"}
    assert str(server.trees.parent) not in json.dumps(report)  # no server path in what a client reads
    assert status["message"] == f"learned from docs's documents: the {shipped} tree chosen"
    learned = server.trees / ".learned-docs"
    preset = json.loads((learned / "preset.json").read_text(encoding="utf-8"))
    assert preset["component"] == "ParallelRetriever"
    assert (learned / "model" / "dashrag-model-card.json").is_file()
    assert json.loads((learned / "report.json").read_text(encoding="utf-8"))["choice"]["shipped"] == shipped
    assert not list(server.trees.glob(".work-*"))  # the job's work folder (the exported documents, the store) is gone


def use_the_learned_tree_then_delete_both(server: Server, name: str, shipped: str) -> None:
    """After the page built ``name`` from the learn job's .learned-docs: a taken name is refused, the new tree
    answers, keeps answering once the tree it learned from is deleted (its own copy of the model), and each tree's
    folders go with it, over HTTP."""
    trees, url = server.trees, server.url
    taken = httpx.post(f"{url}/trees/docs/learned/build", json={"name": "docs"}, timeout=60)
    assert taken.status_code == 409 and "docs" in taken.json()["detail"]
    assert (trees / f".models-{name}").is_dir() == (shipped == "learned")  # the base names no learned model
    assert httpx.delete(f"{url}/trees/docs", timeout=60).status_code == 204
    assert not (trees / "docs").exists() and not (trees / ".learned-docs").exists()
    answer = httpx.post(f"{url}/trees/{name}/query", json={"query": "retrieval"}, timeout=60)
    assert answer.status_code == 200 and answer.json()["chunks"], answer.text
    assert httpx.delete(f"{url}/trees/{name}", timeout=60).status_code == 204
    assert not (trees / name).exists() and not (trees / f".models-{name}").exists()
    assert not list(trees.glob(".deleted-*")) and not list(trees.glob(".upload-*"))
