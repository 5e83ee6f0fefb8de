"""The query tab's filter box on a tree with metadata (issue 39): the server's one message for a bare list, the
tree's fields offered, a warning for a field no document has, and each hit's metadata. Real server, Chromium."""

from __future__ import annotations

import json

import httpx
import pytest
from playwright.sync_api import expect

from tests.fixtures.jobs import finished_job
from tests.web.conftest import build_tree, preset

TAGGED = [
    {"id": "notes/es.txt", "title": "Notas", "text": "Recuperación dispersa con índices invertidos y BM25.",
     "metadata": {"lang": "es", "year": 2024}},
    {"id": "notes/de.txt", "title": "Notizen", "text": "Dichte Vektoren und BM25 für die Suche.",
     "metadata": {"lang": "de", "year": 2012}},
]


@pytest.fixture(scope="module")
def tagged(server) -> str:
    build_tree(server.url, "tagged-box", preset("keyword"))
    job = httpx.post(f"{server.url}/trees/tagged-box/documents", json={"documents": TAGGED}, timeout=60).json()
    finished_job(server.url, job["job_id"])
    return "tagged-box"


def open_query(page, name: str):
    page.get_by_role("button", name="Query saved trees").click()
    page.locator(f'li[data-tree="{name}"]').wait_for()
    page.locator(".query-form select").nth(0).select_option(name)
    page.get_by_label("Query", exact=True).fill("BM25")
    return page.get_by_label("Metadata filter (JSON, optional)")


def test_a_bare_list_gets_the_one_message_the_cli_gives(page, tagged):
    box = open_query(page, tagged)
    box.fill('[{"year": 2024}]')
    errors = page.locator("#query-filter-errors li")
    errors.first.wait_for()
    assert errors.all_inner_texts() == ["$: a filter is a JSON object, not a list"]
    assert page.get_by_role("button", name="Search").is_disabled()


def test_the_trees_fields_are_offered_and_a_click_adds_one(page, tagged):
    box = open_query(page, tagged)
    chip = page.locator('.filter-fields .field-chip[data-field="year"]')
    chip.wait_for()
    assert page.locator(".filter-fields .field-chip").evaluate_all("cs => cs.map(c => c.dataset.field)") == \
        ["file_type", "lang", "modified", "path", "section", "sha256", "title", "year"]
    assert "number" in chip.inner_text()
    box.fill('{"lang": "es"}')
    chip.click()
    assert json.loads(box.input_value()) == {"lang": "es", "year": 2024}


def test_a_field_no_document_has_is_a_warning_above_no_results_and_hits_show_their_metadata(page, tagged):
    box = open_query(page, tagged)
    box.fill('{"yaer": 2024}')
    search = page.get_by_role("button", name="Search")
    expect(search).to_be_enabled()  # once the server's check of the filter answers
    search.click()
    warning = page.locator(".answer-warnings li")
    warning.wait_for()
    assert warning.inner_text() == ("Warning: the filter's field 'yaer' ($.yaer) is in no document, so it matches "
                                    "nothing; the fields are: file_type, lang, modified, path, section, sha256, "
                                    "title, year")
    box.fill('{"year": 2024}')
    expect(search).to_be_enabled()
    search.click()
    page.locator(".results > li").first.wait_for()
    assert page.locator(".answer-warnings").count() == 0
    assert json.loads(page.locator(".results .result-metadata code").first.inner_text()) == {"lang": "es", "year": 2024}
