"""The documents panel's "Learn from these documents" form (issue 41): it starts the learn job on the tree's own
documents, shows its progress, then the report: the tree kept and why, the held-out figures, the plan; all as text.
Real server, Chromium."""

from __future__ import annotations

import re

import pytest

import dashrag
from tests.conftest import EXAMPLE_CORPUS
from tests.web.conftest import serving, watched_page

HOSTILE = '<img src=x onerror="window.hacked=1">Okapi'


@pytest.fixture(scope="module")
def learn_server(tmp_path_factory):
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
        yield url


@pytest.mark.slow  # a training job (one step, 8 tokens) in a real browser: a minute or two on shared cores
def test_the_learn_form_runs_the_job_and_shows_which_tree_it_kept_and_why(browser, learn_server, problems):
    with watched_page(browser, problems) as page:
        page.goto(learn_server + "/")
        page.get_by_role("button", name="Query saved trees").click()
        page.locator('li[data-tree="docs"]').get_by_role("button", name="Documents").click()
        form = page.locator('.documents-panel[data-tree="docs"] .documents-learn')
        form.get_by_label("Time budget (minutes)").fill("20")
        form.get_by_label("At most this many training steps").fill("1")
        form.get_by_label("Tokens per text").fill("8")  # the least the form takes: the step's cost (docs/testing.md)
        form.get_by_role("button", name="Learn from these documents").click()
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
        # "use the learned tree": a new tree from what the job kept, built and listed beside the others
        use = form.locator(".learn-use")
        use.get_by_label("Name of the new tree").fill("docs-learned")
        label = "Use the learned tree" if shipped == "learned" else "Build the base tree it kept"
        use.get_by_role("button", name=label).click()
        built = use.locator('.learn-use-job[data-status="done"]')
        built.wait_for(timeout=300_000)
        assert built.inner_text() == "Built the tree docs-learned: it is listed with the saved trees."
        page.locator('li[data-tree="docs-learned"]').wait_for(timeout=30_000)
