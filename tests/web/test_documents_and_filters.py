"""A saved tree's documents on the page (issue 23: list, add files with metadata, remove with a confirmation) and
the query tab's metadata filter (issue 24, 39: checked live by the server's POST /schemas/filter/check, sent as
``filters``, shown in the results header from the tree's trace), at 1280x720 and 1920x1080 in English and Spanish.

Each test drives the real ``dashrag serve`` in Chromium; the words it looks for are the page's own
(``frontend/src/strings.json``), in the language of the run.
"""

from __future__ import annotations

import json

import httpx
import pytest
from playwright.sync_api import expect

from tests.fixtures.jobs import finished_job
from tests.web import test_newcomer
from tests.web.conftest import build_tree, preset
from tests.web.test_newcomer import STRINGS

shown = test_newcomer.shown  # the fixture: a fresh page at each size in each language, with its words

TAGGED = [
    {"id": "notes/es.txt", "title": "Notas", "text": "Recuperación dispersa con índices invertidos y BM25.",
     "metadata": {"lang": "es", "year": 2024, "tags": ["bm25"]}},
    {"id": "notes/de.txt", "title": "Notizen", "text": "Dichte Vektoren und BM25 für die Suche.",
     "metadata": {"lang": "de", "year": 2012, "tags": ["dense"]}},
]


def language(words: dict) -> str:
    return "es" if words is STRINGS["es"] else "en"


def keyword_tree(server, name: str, tagged: bool = False) -> str:
    """A keyword tree on examples/corpus built over the API, with the TAGGED documents added over it if asked."""
    build_tree(server.url, name, preset("keyword"))
    if tagged:
        job = httpx.post(f"{server.url}/trees/{name}/documents", json={"documents": TAGGED}).json()
        finished_job(server.url, job["job_id"])
    return name


def fresh_tree(server, words, size, stem: str) -> str:
    """A keyword tree of this run's own: for a test that changes its documents."""
    return keyword_tree(server, f"{stem}-{size[0]}-{language(words)}")


@pytest.fixture(scope="module")
def read_tree(server) -> str:
    """One keyword tree for the tests that only read it, at every size and language. Each test built its own, a
    job in a worker process of its own: seconds each, for nothing these tests look at (docs/testing.md, "Eighth
    pass")."""
    return keyword_tree(server, "read-only")


@pytest.fixture(scope="module")
def tagged_tree(server) -> str:
    """A keyword tree with the two TAGGED documents added over the API: the filter tests', which only query it."""
    return keyword_tree(server, "tagged", tagged=True)


def open_documents(page, words, name: str):
    page.get_by_role("button", name=words["tabQuery"]).click()
    page.locator(f'li[data-tree="{name}"]').get_by_role("button", name=words["docsButton"]).click()
    panel = page.locator(f'.documents-panel[data-tree="{name}"]')
    panel.locator(".documents-count").wait_for()
    return panel


def tree_row(page, name: str):
    return page.locator(f'li[data-tree="{name}"]')


def test_the_documents_panel_lists_a_trees_documents_a_page_at_a_time(shown, read_tree):
    page, words, _ = shown
    name = read_tree
    panel = open_documents(page, words, name)
    assert panel.locator(".documents-count").inner_text().startswith(words["docsCount"].format(total=8))
    rows = panel.locator("tbody tr")
    assert rows.count() == 8 and rows.first.get_attribute("data-document") == "bm25.md"
    assert panel.get_by_role("button", name=words["docsNext"]).is_disabled()


def test_files_are_added_with_metadata_as_a_job_and_the_count_follows(shown, server):
    page, words, size = shown
    name = fresh_tree(server, words, size, "added")
    panel = open_documents(page, words, name)
    panel.get_by_label(words["docsFiles"]).set_input_files(
        [{"name": "sparse.txt", "mimeType": "text/plain", "buffer": b"Sparse vectors hold one weight per term."}])
    metadata = panel.get_by_label(words["docsMetadataLabel"])
    metadata.fill('{"lang": "es", "year": 2024')  # not JSON yet: the error at the box, the button off
    assert metadata.get_attribute("aria-invalid") == "true"
    assert panel.locator("#documents-metadata-error").inner_text().startswith(words["docsMetadataNotJson"][:12])
    assert panel.get_by_role("button", name=words["docsAddButton"]).is_disabled()
    metadata.fill('{"lang": "es", "year": 2024}')
    panel.get_by_role("button", name=words["docsAddButton"]).click()
    job = page.locator('.documents-panel .job[data-status="done"]')
    job.wait_for(timeout=120_000)
    assert words["status_done"] in job.inner_text()
    counts = words["docsCounts"].format(added=1, replaced=0, skipped=0, removed=0)
    assert panel.locator(".documents-counts").inner_text() == counts
    added = panel.locator('tr[data-document="sparse.txt"]')
    shown = json.loads(added.locator(".documents-metadata").inner_text())  # the sidecar's, beside the file's own
    assert {k: shown[k] for k in ("lang", "year", "path", "file_type")} == {"lang": "es", "year": 2024,
                                                                         "path": "sparse.txt", "file_type": "txt"}
    assert panel.locator(".documents-count").inner_text().startswith(words["docsCount"].format(total=9))
    tree_row(page, name).get_by_text(f"9 {words['documents']}").wait_for()  # the saved trees' list follows


def test_a_document_is_removed_only_after_confirmation(shown, server):
    page, words, size = shown
    name = fresh_tree(server, words, size, "removed")
    panel = open_documents(page, words, name)
    panel.get_by_role("button", name=words["docsRemoveOne"].format(id="bm25.md")).click()
    confirm = page.get_by_role("alertdialog")
    assert confirm.inner_text().startswith(words["docsConfirm"].format(id="bm25.md", name=name)[:20])
    confirm.get_by_role("button", name=words["docsConfirmNo"]).click()
    assert panel.locator('tr[data-document="bm25.md"]').count() == 1
    panel.get_by_role("button", name=words["docsRemoveOne"].format(id="bm25.md")).click()
    page.get_by_role("alertdialog").get_by_role("button", name=words["docsConfirmYes"]).click()
    panel.locator(".documents-counts").wait_for()
    panel.locator('tr[data-document="bm25.md"]').wait_for(state="detached")
    assert panel.locator(".documents-count").inner_text().startswith(words["docsCount"].format(total=7))
    tree_row(page, name).get_by_text(f"7 {words['documents']}").wait_for()


def test_an_unknown_id_is_named_at_the_field_with_the_apis_message(shown, read_tree, problems):
    page, words, _ = shown
    name = read_tree
    problems.expect(404, f"/trees/{name}/documents/nope.md")
    panel = open_documents(page, words, name)
    field = panel.get_by_label(words["docsId"], exact=True)
    field.fill("nope.md")
    panel.locator(".documents-remove").get_by_role("button", name=words["docsRemove"], exact=True).click()
    page.get_by_role("alertdialog").get_by_role("button", name=words["docsConfirmYes"]).click()
    error = panel.locator("#documents-remove-error")
    error.locator(".failure-summary").wait_for()
    assert "unknown document id" in error.inner_text() and "nope.md" in error.inner_text()
    assert error.locator(".failure-summary").inner_text() == words["error404"]
    assert field.get_attribute("aria-invalid") == "true"
    assert panel.locator("tbody tr").count() == 8  # nothing changed


def test_the_filter_box_is_checked_live_by_the_servers_own_check(shown, read_tree):
    page, words, _ = shown
    page.get_by_role("button", name=words["tabQuery"]).click()
    box = page.get_by_label(words["filterLabel"])
    assert box.get_attribute("placeholder") == words["filterPlaceholder"]
    page.get_by_label(words["query"], exact=True).fill("BM25")
    box.fill('{"year": {"$gtee": 2015}}')
    errors = page.locator("#query-filter-errors")
    errors.locator("li").first.wait_for()
    said = errors.inner_text()  # what `dashrag query --filter` says: POST /schemas/filter/check, one message
    assert said.startswith("$.year.$gtee: unknown operator '$gtee'") and errors.locator("li").count() == 1
    assert box.get_attribute("aria-invalid") == "true"
    assert page.get_by_role("button", name=words["search"]).is_disabled()
    box.fill('{"year": ')
    assert errors.inner_text().startswith(words["filterNotJson"].split("{")[0].strip())
    box.fill('{"year": {"$gte": 2015}}')
    expect(page.get_by_role("button", name=words["search"])).to_be_enabled()  # once the server's check answers
    assert errors.locator("li").count() == 0


def test_a_filtered_query_returns_only_matching_documents_and_says_its_filter(shown, tagged_tree):
    page, words, _ = shown
    name = tagged_tree
    page.get_by_role("button", name=words["tabQuery"]).click()
    tree_row(page, name).wait_for(timeout=15_000)
    page.locator(".query-form select").nth(0).select_option(name)
    page.get_by_label(words["query"], exact=True).fill("BM25")
    page.get_by_label(words["filterLabel"]).fill('{"lang": {"$in": ["es", "de"]}, "year": {"$gte": 2020}}')
    page.get_by_role("button", name=words["search"]).click()
    column = page.locator(f'.answer-column[data-tree="{name}"]')
    column.locator(".results > li").first.wait_for()
    assert column.locator(".results .result-head code").all_inner_texts() == ["notes/es.txt"]
    header = column.locator(".results-filter")
    assert header.inner_text().startswith(words["filterApplied"])
    assert json.loads(header.locator("code").inner_text()) == {"lang": {"$in": ["es", "de"]}, "year": {"$gte": 2020}}


def test_a_filter_the_corpus_cannot_answer_is_named_at_the_box(shown, tagged_tree, problems):
    page, words, _ = shown
    name = tagged_tree
    problems.expect(422, f"/trees/{name}/query")
    page.get_by_role("button", name=words["tabQuery"]).click()
    tree_row(page, name).wait_for(timeout=15_000)
    page.locator(".query-form select").nth(0).select_option(name)
    page.get_by_label(words["query"], exact=True).fill("BM25")
    box = page.get_by_label(words["filterLabel"])
    box.fill('{"year": "2015"}')  # the schema allows a string; the corpus's years are numbers
    page.get_by_role("button", name=words["search"]).click()
    errors = page.locator("#query-filter-errors")
    errors.locator("li").first.wait_for()
    assert "$.year" in errors.inner_text() and "compares a string" in errors.inner_text()
    assert box.get_attribute("aria-invalid") == "true"

