"""Building an index with a chunker chosen on the page, its parameters from its schema form."""

from __future__ import annotations

from dashrag.api import DEFAULT_CHUNKER
from dashrag.chunkers.base import Chunker
from dashrag.core.factory import build_as
from dashrag.documents.corpus import Corpus
from tests.conftest import REPO

TOKENS = {"component": "TokenChunker", "params": {"chunk_size": 40, "chunk_overlap": 5}}


def chunk_count(chunker: dict) -> int:
    documents = Corpus.from_path(REPO / "examples" / "corpus").documents
    return len(build_as(chunker, Chunker, "chunker").chunk(documents))


def choose_token_chunker(page) -> None:
    page.get_by_label("Chunker").select_option("TokenChunker")
    page.locator('.index-panel section[data-component="TokenChunker"]').wait_for()


def test_the_chosen_chunker_and_its_parameters_cut_the_indexed_corpus(page):
    expected = chunk_count(TOKENS)
    assert expected != chunk_count(DEFAULT_CHUNKER)  # the choice shows in the built tree
    page.get_by_label("Presets").select_option("keyword")
    page.get_by_role("button", name="Load preset").click()
    choose_token_chunker(page)
    page.locator("#chunker_chunk_size").fill("40")
    page.locator("#chunker_chunk_overlap").fill("5")
    page.get_by_label("Tree name").fill("by-tokens")
    page.get_by_label("Corpus path").fill("corpus")
    page.get_by_text("The tree is valid").wait_for()
    page.get_by_role("button", name="Build index").click()
    page.locator('.job[data-status="done"]').wait_for(timeout=120_000)
    page.get_by_role("button", name="Query saved trees").click()
    saved = page.locator('li[data-tree="by-tokens"]')
    saved.wait_for()
    assert f"· {expected} chunks ·" in saved.inner_text()


def test_a_chunker_rule_shows_at_its_field_and_blocks_the_build(page):
    page.get_by_label("Presets").select_option("keyword")
    page.get_by_role("button", name="Load preset").click()
    choose_token_chunker(page)
    page.locator("#chunker_chunk_overlap").fill("500")
    group = page.locator("#chunker_chunk_overlap").locator('xpath=ancestor::div[contains(@class, "form-group")][1]')
    group.locator(".error-detail li", has_text="chunk_overlap (500) must be < chunk_size (200)").wait_for()
    page.get_by_label("Corpus path").fill("corpus")
    assert page.get_by_role("button", name="Build index").is_disabled()
