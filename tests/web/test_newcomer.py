"""The first hour on the page (issue 27), at 1280x720 and 1920x1080, in English and Spanish.

Each test drives the real ``dashrag serve`` in Chromium; the words it looks for are the page's own
(``frontend/src/strings.json``), in the language of the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

import dashrag
from tests.conftest import EXAMPLE_CORPUS, REPO
from tests.web.conftest import build_tree, preset, tab

STRINGS = json.loads((REPO / "frontend" / "src" / "strings.json").read_text(encoding="utf-8"))["strings"]
SHOWN = [(1280, 720, "en"), (1280, 720, "es"), (1920, 1080, "en"), (1920, 1080, "es")]
# A behaviour that does not depend on the window (nothing asked to be in view) runs at each size once and in each
# language once, the smaller window with the longer words; what is asked to be in view runs at every one of SHOWN
# (docs/testing.md, "Merged or removed tests").
EACH_ONCE = [(1280, 720, "es"), (1920, 1080, "en")]
RED = "rgb(179, 38, 30)"  # --bad


def size_and_language(shown: tuple[int, int, str]) -> str:
    return f"{shown[0]}x{shown[1]}-{shown[2]}"


@pytest.fixture(params=EACH_ONCE, ids=size_and_language)
def shown(request, tabs, server, problems):
    """The page loaded afresh at the run's size in the run's language, and its words."""
    yield from fresh_page(request.param, tabs, server, problems)


@pytest.fixture(params=SHOWN, ids=size_and_language)
def shown_at_every_size(request, tabs, server, problems):
    """``shown`` at both sizes in both languages: for what must stay in view, which the window decides."""
    yield from fresh_page(request.param, tabs, server, problems)


def fresh_page(size_lang: tuple[int, int, str], tabs, server, problems) -> Iterator[tuple]:
    """The page loaded afresh at that size in that language (the file's tab for the language, reset: ``tab``), and
    its words; the test fails on any problem of the page."""
    width, height, lang = size_lang
    words = STRINGS[lang]
    with tab(tabs, problems, server.url + "/", locale="es-ES" if lang == "es" else "en-US", viewport=(width, height),
             timeout_ms=30_000) as page:
        page.get_by_role("button", name=words["chooseRoot"]).wait_for()
        yield page, words, (width, height)


def in_view(page, locator, size) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size[1] and box["x"] >= 0 \
        and box["x"] + box["width"] <= size[0]


def load_preset(page, words, name: str) -> None:
    page.get_by_label(words["presets"]).select_option(name)
    page.get_by_role("button", name=words["loadPreset"]).click()


def start_build(page, words, tree_name: str, corpus: str = "corpus") -> None:
    page.get_by_label(words["treeName"]).fill(tree_name)
    page.get_by_label(words["corpusPath"]).fill(corpus)
    page.get_by_text(words["noErrors"]).wait_for()
    page.get_by_role("button", name=words["build"]).click()


def test_the_build_button_says_why_it_is_disabled_on_first_view(shown):
    page, words, _ = shown
    assert page.get_by_role("button", name=words["build"]).is_disabled()
    assert page.locator(".build-why").inner_text() == words["needTree"]
    load_preset(page, words, "keyword")
    page.get_by_text(words["noErrors"]).wait_for()
    assert page.locator(".build-why").inner_text() == words["needCorpus"]


def test_the_build_status_stays_in_view_with_its_stage_and_time(shown_at_every_size, server):
    page, words, size = shown_at_every_size
    load_preset(page, words, "keyword")
    start_build(page, words, f"kept-{size[0]}-{words['build'][:5].strip()}")
    job = page.locator('.job[data-status="done"]')
    job.wait_for(timeout=120_000)
    assert in_view(page, job, size)  # without scrolling, wherever the form was
    assert words["stage_6"] in job.inner_text()  # the last stage, in the page's language
    assert re.search(r"\d+ s", job.inner_text())
    assert in_view(page, job.get_by_role("button", name=words["goQuery"]), size)


def test_a_running_build_shows_counts_and_can_be_cancelled(shown_at_every_size):
    page, words, size = shown_at_every_size
    load_preset(page, words, "semantic")
    start_build(page, words, f"cancelled-{size[0]}-{page.evaluate('document.documentElement.lang')}")
    running = page.locator('.job[data-status="running"]')
    running.wait_for(timeout=60_000)
    assert in_view(page, running, size)
    page.get_by_role("button", name=words["cancelBuild"]).click()
    cancelled = page.locator('.job[data-status="cancelled"]')
    cancelled.wait_for(timeout=120_000)
    assert words["jobCancelled"] in cancelled.inner_text()


def test_a_failed_build_is_red_with_its_message_and_cleared_by_another_tree(shown_at_every_size, tmp_path):
    page, words, size = shown_at_every_size
    # a markdown file given as the corpus is read as JSONL, and fails only when the build reads it (a config the
    # server would refuse, such as an LLM endpoint it does not allow, is stopped before any build: security.md)
    load_preset(page, words, "keyword")
    start_build(page, words, f"bad-corpus-{size[0]}-{page.evaluate('document.documentElement.lang')}",
                corpus="corpus/bm25.md")
    failed = page.locator('.job[data-status="failed"]')
    try:
        failed.wait_for(timeout=180_000)
    except Exception:
        page.screenshot(path=str(tmp_path / "failed.png"))  # per test: safe beside other workers
        raise
    assert in_view(page, failed, size)
    assert failed.evaluate("e => getComputedStyle(e).borderTopColor") == RED
    assert words["jobFailed"] in failed.inner_text() and "bm25.md" in failed.inner_text()
    load_preset(page, words, "keyword")
    page.locator(".job").wait_for(state="detached")


def test_the_stemmer_is_a_list_of_the_known_languages(shown):
    page, words, _ = shown
    load_preset(page, words, "keyword")
    stemmer = page.locator("select[id$='_stemmer']").first
    stemmer.wait_for()
    values = stemmer.locator("option").evaluate_all("os => os.map(o => o.textContent)")
    assert any("(english)" in v for v in values) and any("(spanish)" in v for v in values)
    assert not page.locator("input[id$='_stemmer']").count()


def test_a_tree_saved_by_someone_else_appears_in_the_list(shown, server, tmp_path):
    page, words, size = shown
    page.get_by_role("button", name=words["tabQuery"]).click()
    name = f"outside-{size[0]}-{'es' if words is STRINGS['es'] else 'en'}"
    dashrag.build(preset("keyword"), EXAMPLE_CORPUS, tmp_path / "work").save(server.trees / name)
    page.locator(f'li[data-tree="{name}"]').wait_for(timeout=15_000)  # polled, no reload clicked


def test_query_top_k_full_text_and_shared_documents(shown, server):
    page, words, _ = shown
    for name in ("q-keyword", "q-tfidf"):
        if not (server.trees / name).exists():
            build_tree(server.url, name, preset("keyword" if name == "q-keyword" else "tfidf"))
    page.get_by_role("button", name=words["tabQuery"]).click()
    page.locator('li[data-tree="q-tfidf"]').wait_for(timeout=15_000)
    page.locator(".query-form select").nth(0).select_option("q-keyword")
    page.get_by_label(words["compare"]).check()
    page.locator(".query-form select").nth(1).select_option("q-tfidf")
    page.get_by_label(words["topK"]).fill("2")
    page.get_by_label(words["query"], exact=True).fill("how does BM25 saturate term frequency")
    page.get_by_role("button", name=words["search"]).click()
    columns = page.locator(".answer-column")
    columns.nth(1).locator(".results > li").first.wait_for()
    assert [columns.nth(i).locator(".results > li").count() for i in range(2)] == [2, 2]
    first = columns.nth(0).locator(".result-text").first
    assert first.evaluate("e => e.scrollHeight <= e.clientHeight + 1")  # the whole text shows, no inner scroll
    shared = page.locator('.results > li[data-shared="true"]')
    assert shared.count() >= 2 and shared.first.locator(".shared-badge").inner_text() == words["sharedResult"]


def test_round_robin_scores_are_explained(shown, server):
    page, words, _ = shown
    if not (server.trees / "rr").exists():
        build_tree(server.url, "rr", {"component": "ParallelRetriever", "params": {
            "merge_strategy": "round_robin", "children": [preset("keyword"), preset("tfidf")]}})
    page.get_by_role("button", name=words["tabQuery"]).click()
    page.locator('li[data-tree="rr"]').wait_for(timeout=15_000)
    page.locator(".query-form select").nth(0).select_option("rr")
    page.get_by_label(words["query"], exact=True).fill("rank fusion")
    page.get_by_role("button", name=words["search"]).click()
    page.get_by_text(words["roundRobinScores"]).wait_for()
