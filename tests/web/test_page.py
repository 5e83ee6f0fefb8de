"""The web page in a real browser, against the real server: the issue's must-shows (a) to (e).

Field ids follow rjsf: ``<node id>_<field>``, where a node's id is ``node`` plus its JSON path
(``params.children[0]`` -> ``node-params-children-0``), as ``nodeId`` in frontend/src/NodeCard.jsx.
"""

from __future__ import annotations

import json
import re

import httpx
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from dashrag.core.validation import validate_and_transform
from dashrag.service.calibration import PROBE_COUNT
from tests.conftest import REPO
from tests.llm.openai_server import malformed_json, select
from tests.web.build_progress import RECORD_JOB, assert_the_dense_stages_were_shown
from tests.web.conftest import LLM_KEY_VAR, build_tree, preset

SERVER_SAYS_VALID = {"valid": True, "errors": []}
ENGLISH = json.loads((REPO / "frontend" / "src" / "strings.json").read_text(encoding="utf-8"))["strings"]["en"]


def node_id(path: str) -> str:
    return "node-" + re.sub(r"[^A-Za-z0-9]+", "-", path).rstrip("-") if path else "node"


def field(page, path: str, name: str):
    return page.locator(f"#{node_id(path)}_{name}")


def field_group(page, path: str, name: str):
    """The rjsf group of one field: its label, input, help and errors."""
    return field(page, path, name).locator('xpath=ancestor::div[contains(@class, "form-group")][1]')


def choose(page, component: str) -> None:
    page.locator(f'dialog[open] button.pick[data-component="{component}"]').click()


def on_screen(page) -> dict:
    return json.loads(page.locator("#tree-json").input_value())


def load_json(page, tree: dict) -> None:
    page.locator("#tree-json").fill(json.dumps(tree, indent=2))
    page.get_by_role("button", name="Load JSON", exact=True).click()
    page.locator(f'section[data-path=""][data-component="{tree["component"]}"]').wait_for()


def test_build_the_hybrid_tree_from_nothing_index_examples_and_query_it(page, server):
    """Assembled by the picker, built from the page while its status shows each stage of the dense child
    (``build_progress``), then queried with its trace."""
    page.get_by_role("button", name="Choose the root component").click()
    choose(page, "ParallelRetriever")
    for i in (1, 0):  # clear the default children, then add the two by the picker
        page.locator(f'section[data-path="params.children[{i}]"] > header').get_by_role("button", name="Remove").click()
    page.locator('button[data-slot="params.children"]').click()
    choose(page, "BM25Retriever")
    page.locator('button[data-slot="params.children"]').click()
    choose(page, "DenseEmbeddingRetriever")
    bm25 = "params.children[0]"
    field(page, bm25, "variant").select_option(label="Lucene (lucene)")
    vectorizer = f"{bm25}.params.vectorizer"
    field(page, vectorizer, "stop_words").select_option(label="English (english)")
    field(page, vectorizer, "stemmer").select_option(label="English (english)")  # a closed choice
    representation = page.locator(f'section[data-path="{bm25}"] > .representation')
    assert representation.inner_text() == "BM25 lucene k1=1.5 b=0.75 top 5"
    page.get_by_text("The tree is valid").wait_for()
    assert validate_and_transform(on_screen(page)) == validate_and_transform(preset("hybrid"))

    page.get_by_label("Tree name").fill("hybrid")
    page.get_by_label("Corpus path").fill("corpus")
    page.evaluate(RECORD_JOB)
    page.get_by_role("button", name="Build index").click()
    page.locator('.job[data-status="done"]').wait_for(timeout=240_000)
    assert_the_dense_stages_were_shown(page, ENGLISH)

    page.get_by_role("button", name="Query saved trees").click()
    page.locator('li[data-tree="hybrid"]').wait_for()
    page.locator(".query-form select").first.select_option("hybrid")  # other tests' trees may come first
    page.get_by_label("Query", exact=True).fill("how does BM25 saturate term frequency")
    page.get_by_role("button", name="Search").click()
    results = page.locator(".results > li")
    results.first.wait_for()
    assert "bm25.md" in results.first.inner_text()
    child = page.locator(".trace > details.trace-node > .trace-body > details.trace-node").first
    assert child.get_attribute("open") is None
    child.locator("> summary").click()
    assert child.get_attribute("open") is not None
    assert "BM25Retriever" in child.locator("> summary").inner_text()
    assert child.locator(".trace-output > li").first.is_visible()


def test_top_k_above_k1_on_the_agentic_reranker_shows_at_the_field_before_anything_is_sent(page, server):
    # the server is made to say "valid": whatever error shows comes from the page's own checks
    page.route("**/trees/validate", lambda route: route.fulfill(json=SERVER_SAYS_VALID))
    page.get_by_role("button", name="Choose the root component").click()
    choose(page, "AgenticRerankerRetriever")
    field(page, "", "top_k").fill("20")
    field_group(page, "", "top_k").locator(".error-detail li", has_text="top_k (20) must be <= k1 (10)").wait_for()
    assert page.get_by_role("button", name="Build index").is_disabled()
    # and the server, asked about the same tree, reports the same rule at the same field
    answer = httpx.post(f"{server.url}/trees/validate", json=on_screen(page)).json()
    assert {"path": "params.top_k", "message": "top_k (20) must be <= k1 (10)"} in answer["errors"]


def test_a_loaded_preset_edited_in_the_form_downloads_exactly_that_json(page, tmp_path):
    original = preset("hybrid")
    page.get_by_label("Presets").select_option("hybrid")
    page.get_by_role("button", name="Load preset").click()
    field(page, "params.children[0]", "k1").fill("1.2")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download JSON").click()
    saved = tmp_path / "tree.json"
    download.value.save_as(saved)
    expected = json.loads(json.dumps(original))
    expected["params"]["children"][0]["params"]["k1"] = 1.2
    assert json.loads(saved.read_text(encoding="utf-8")) == expected


def test_the_spanish_switch_shows_spanish_labels(page):
    page.get_by_label("Language").select_option(label="Español")
    page.get_by_role("button", name="Elegir el componente raíz").click()
    offered = page.locator('dialog[open] button.pick[data-component="ParallelRetriever"]').inner_text()
    assert "Fusión en paralelo" in offered and "Ejecuta varios recuperadores" in offered
    assert page.locator("dialog[open] .picker-group h3").all_inner_texts()[:2] == ["COMPUESTOS", "PALABRAS CLAVE"]
    choose(page, "ParallelRetriever")
    root = page.locator('section[data-path=""]')
    assert root.locator("> header .node-title strong").inner_text() == "Fusión en paralelo"
    form = root.locator("> .node-form").inner_text()
    assert "Estrategia de fusión (merge_strategy)" in form and "(por defecto: round_robin)" in form
    assert root.locator('> fieldset[data-field="children"] > legend').inner_text() == "Hijos (children)"
    field(page, "", "rrf_k").fill("0")
    field_group(page, "", "rrf_k").locator(".error-detail li", has_text="debe ser > 0").wait_for()
    assert page.get_by_role("button", name="Consultar árboles guardados").is_visible()
    assert page.locator("html").get_attribute("lang") == "es"


def owning_node(path: str) -> str:
    """The node whose card shows an error at ``path`` (``params.vectorizer.params.ngram_min``: the vectorizer)."""
    if path == "component" or path.endswith(".component"):
        return path[: -len("component")].rstrip(".")
    at = path.rfind(".params.")
    return path[:at] if at >= 0 else ""


def error_at(page, path: str):
    """The error list the page shows for ``path``: at the field, at the slot, or at the node."""
    node = owning_node(path)
    rest = path[len(node):].lstrip(".")
    section = f'section[data-path="{node}"]'
    if not rest.startswith("params."):  # the component's name, or a key a node does not have
        return page.locator(f"{section} > ul.errors li")
    name = rest[len("params."):]
    slot = page.locator(f'{section} > fieldset[data-field="{name}"]')
    scalar = page.locator(f'{section} > .node-form [id^="{node_id(node)}_{name}"]').first
    if slot.count() == 0 and scalar.count() == 0:  # a parameter the component does not have: said at the node
        return page.locator(f"{section} > ul.errors li", has_text=name)
    return slot.locator("> ul.errors li").or_(
        scalar.locator('xpath=ancestor::div[contains(@class, "form-group")][1]').locator(".error-detail li"))


def test_every_config_the_server_rejects_the_page_rejects_at_the_same_field_on_its_own(page):
    from tests.core.test_schema import BROKEN

    page.route("**/trees/validate", lambda route: route.fulfill(json=SERVER_SAYS_VALID))
    missed = []
    for case in BROKEN:
        load_json(page, case["config"])
        try:
            error_at(page, case["path"]).first.wait_for(timeout=3_000)
        except PlaywrightTimeout:
            missed.append(f"{case['name']} ({case['path']})")
    assert missed == []


def test_an_uploaded_corpus_is_indexed_and_its_text_shown_as_text_never_as_html(page, tmp_path):
    hostile = tmp_path / "hostile.md"
    html = '<img src=x onerror="window.hacked=1"> <b>bold</b>'
    hostile.write_text(f"# Injection\n\nzebra {html} zebra\n", encoding="utf-8")
    page.get_by_label("Presets").select_option("keyword")
    page.get_by_role("button", name="Load preset").click()
    page.get_by_label("Tree name").fill("uploaded")
    page.get_by_label("or upload").set_input_files([str(hostile)])
    page.get_by_role("button", name="Build index").click()
    page.locator('.job[data-status="done"]').wait_for(timeout=120_000)
    page.get_by_role("button", name="Query saved trees").click()
    page.locator(".query-form select").first.select_option("uploaded")
    page.get_by_label("Query", exact=True).fill("zebra")
    page.get_by_role("button", name="Search").click()
    text = page.locator(".results > li .result-text").first
    text.wait_for()
    assert '<img src=x onerror="window.hacked=1">' in text.inner_text()
    assert page.locator(".results img, .results b").count() == 0
    assert page.evaluate("window.hacked") is None


def test_a_tree_can_be_started_from_the_keyboard_alone(page):
    page.keyboard.press("Tab")  # the first control: the tab buttons, then the root chooser
    for _ in range(10):
        if page.evaluate("document.activeElement.textContent") == "Choose the root component":
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.closest('dialog') !== null")  # the picker takes the focus
    page.keyboard.press("Tab")  # to the second component offered
    offered = page.evaluate("document.activeElement.dataset.component")
    page.keyboard.press("Enter")
    page.locator(f'section[data-path=""][data-component="{offered}"]').wait_for()
    page.keyboard.press("Enter")  # the focus is back on the button that opened the picker: "New tree"
    page.locator("dialog[open]").wait_for()
    page.keyboard.press("Escape")
    assert page.locator("dialog[open]").count() == 0


def test_the_trace_of_the_llm_reranker_shows_every_attempt_and_its_verdict(page, server, web_llm):
    # loading a saved tree calibrates its scores with probe queries (dashrag/service/calibration.py): at most
    # one call each
    llm = web_llm
    llm.clear()
    llm.script(*[select(1, 2)] * PROBE_COUNT)
    build_tree(server.url, "agentic-web", {"component": "AgenticRerankerRetriever", "params": {
        "k1": 4, "top_k": 2, "children": [{"component": "BM25Retriever", "params": {"top_k": 4}}],
        "llm_model": {"component": "LiteLLMModel", "params": {
            "model": "openai/test-model", "api_base": llm.api_base, "timeout": 5.0,
            "credential": {"component": "EnvCredential", "params": {"var": LLM_KEY_VAR}}}}}})
    llm.clear()
    llm.script(malformed_json(), select(2, 1))  # the page's query: one invalid answer, then a valid one
    page.get_by_role("button", name="Query saved trees").click()
    page.locator(".query-form select").first.select_option("agentic-web")
    page.get_by_label("Query", exact=True).fill("the ranking of documents for a query")
    page.get_by_role("button", name="Search").click()
    page.locator(".results > li").first.wait_for()
    attempts = page.locator(".trace .attempts tbody tr")
    assert attempts.count() == 2
    assert attempts.nth(0).get_attribute("class") == "rejected" and "✗" in attempts.nth(0).inner_text()
    assert attempts.nth(1).get_attribute("class") == "accepted" and "✓ 2, 1" in attempts.nth(1).inner_text()
    assert "LLM selected 2 of 4 candidates in 2 call(s)" in page.locator(".trace .attempts").inner_text()
    assert page.locator(".results > li").count() == 2
