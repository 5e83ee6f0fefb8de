"""The build form as a newcomer meets it (issue 27), at 1280x720 and 1920x1080, in English and Spanish.

Each test drives the real ``dashrag serve`` in Chromium (``shown``: tests/web/test_newcomer.py). The words it
looks for are the page's (frontend/src/strings.json) and the components' (frontend_meta/), in the run's language.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from dashrag.core.translations import catalog
from tests.conftest import REPO
from tests.web import test_newcomer as newcomer
from tests.web.conftest import build_tree, preset, serving
from tests.web.test_newcomer import EACH_ONCE, STRINGS, in_view, load_preset, size_and_language
from tests.web.test_page import field, node_id

shown = newcomer.shown  # the fixtures: a fresh page at each size once and in each language once,
shown_at_every_size = newcomer.shown_at_every_size  # or at each size in each language (what must be in view)

META = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (REPO / "frontend_meta").glob("*.json")}
VECTORIZER = "params.vectorizer"


def lang_of(words: dict) -> str:
    return "es" if words is STRINGS["es"] else "en"


def label_of(page, path: str, name: str) -> str:
    return page.locator(f'label[for="{node_id(path)}_{name}"]').first.inner_text()


def load_json(page, words, tree: dict) -> None:
    page.locator("#tree-json").fill(json.dumps(tree))
    page.get_by_role("button", name=words["loadJson"], exact=True).click()
    page.locator(f'section[data-path=""][data-component="{tree["component"]}"]').wait_for()


def test_the_device_is_a_list_of_the_torch_devices(shown):
    page, words, _ = shown
    load_preset(page, words, "semantic")
    device = field(page, "params.embedding", "device")
    values = device.locator("option").evaluate_all("os => os.map(o => o.value)")
    labels = device.locator("option").evaluate_all("os => os.map(o => o.textContent)")
    assert device.evaluate("e => e.tagName") == "SELECT" and len(values) == 3
    assert labels == [next(lab[lang_of(words)] for lab in META["MiniLMEmbedding"]["params"]["device"]["enum_labels"]
                           if lab["value"] == v) + f" ({v})" for v in ("cpu", "cuda", "mps")]


def test_a_device_outside_the_list_stays_as_the_config_gives_it(shown):
    page, words, _ = shown
    load_json(page, words, {"component": "DenseEmbeddingRetriever", "params": {
        "embedding": {"component": "MiniLMEmbedding", "params": {"device": "cuda:1"}}}})
    device = field(page, "params.embedding", "device")
    assert device.evaluate("e => e.tagName") == "SELECT"
    assert device.evaluate("e => e.options[e.selectedIndex].textContent") == "cuda:1"
    on_screen = json.loads(page.locator("#tree-json").input_value())
    assert on_screen["params"]["embedding"]["params"]["device"] == "cuda:1"


def test_titles_are_words_from_the_one_table_with_the_field_name(shown):
    page, words, _ = shown
    load_preset(page, words, "keyword")
    table = catalog()[f"titles_{lang_of(words)}"]
    for name in ("min_df", "ngram_min", "max_df"):
        assert label_of(page, VECTORIZER, name) == f"{table[name]} ({name})"
    assert label_of(page, "", "top_k") == f"{table['top_k']} (top_k)"
    assert "Min Df" not in page.locator("main").inner_text()


def test_fields_kept_for_older_configs_are_under_the_advanced_fold(shown):
    page, words, _ = shown
    load_preset(page, words, "keyword")
    for path, name in (("", "similarity_function"), (VECTORIZER, "drop_source_columns")):
        fold = field(page, path, name).locator("xpath=ancestor::details[1]")
        assert "advanced" in fold.get_attribute("class") and fold.get_attribute("open") is None
        assert words["advanced"] in fold.locator("> summary").inner_text()
        assert not field(page, path, name).is_visible()
    assert field(page, "", "variant").is_visible()  # a field a new tree needs stays in view


def test_a_node_collapses_and_expands(shown):
    page, words, _ = shown
    load_preset(page, words, "keyword")
    node = page.locator(f'section.node[data-path="{VECTORIZER}"]')
    toggle = node.locator("> header button.collapse")
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "false" and not field(page, VECTORIZER, "stemmer").is_visible()
    assert node.locator("> .representation").is_visible()  # what the node does stays readable
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true" and field(page, VECTORIZER, "stemmer").is_visible()


def test_each_problem_links_to_its_field_opening_the_nodes_on_the_way(shown_at_every_size):
    page, words, size = shown_at_every_size
    tree = preset("hybrid")
    tree["params"]["children"][0]["params"]["vectorizer"]["params"]["ngram_min"] = 3  # > ngram_max (1)
    load_json(page, words, tree)
    page.locator('section.node[data-path="params.children[0]"] > header button.collapse').click()
    collapsed = page.locator('section.node[data-path="params.children[0]"] .inside-problems')
    assert collapsed.inner_text() == words["problemsInside"].format(count=1)
    target = "params.children[0].params.vectorizer.params.ngram_min"
    link = page.locator(f'details.problems button.problem-link[data-path="{target}"]')
    assert "ngram_min" in link.inner_text()
    link.click()
    page.wait_for_function("id => document.activeElement && document.activeElement.id === id",
                           arg=f"{node_id('params.children[0].params.vectorizer')}_ngram_min")
    assert in_view(page, field(page, "params.children[0].params.vectorizer", "ngram_min"), size)


def test_each_weight_is_labelled_by_its_child_and_its_buttons_say_what_they_do(shown):
    page, words, _ = shown
    load_preset(page, words, "hybrid_weighted")
    lang = lang_of(words)
    labels = page.locator('section.node[data-path=""] > .node-form .list-item-label').all_inner_texts()
    children = [META[c["component"]]["display"][lang]["name"] for c in preset("hybrid_weighted")["params"]["children"]]
    assert labels == [words["itemOf"].format(n=i + 1, name=name) for i, name in enumerate(children)]
    assert page.locator(".glyphicon").count() == 0
    buttons = page.locator('section.node[data-path=""] > .node-form .list-field button')
    assert buttons.count() >= 3 and all(text.strip() for text in buttons.all_inner_texts())
    field(page, "", "weights_1").fill("0.8")
    page.locator(".list-item").nth(1).locator("button.array-item-move-up").click()
    assert json.loads(page.locator("#tree-json").input_value())["params"]["weights"][0] == 0.8


def test_a_hand_added_bm25_starts_as_the_keyword_preset_ranks(shown):
    page, words, _ = shown
    page.get_by_role("button", name=words["chooseRoot"]).click()
    page.locator('dialog[open] button.pick[data-component="BM25Retriever"]').click()
    params = json.loads(page.locator("#tree-json").input_value())["params"]
    keyword = preset("keyword")["params"]
    assert params["variant"] == keyword["variant"]
    assert {k: params["vectorizer"]["params"][k] for k in ("stop_words", "stemmer")} == \
        keyword["vectorizer"]["params"]
    page.get_by_text(words["noErrors"]).wait_for()


def test_a_taken_name_reads_in_words_and_can_be_replaced(shown, server, problems):
    page, words, size = shown
    name = f"taken-{size[0]}-{lang_of(words)}"
    build_tree(server.url, name, preset("keyword"))
    problems.expect(409, "/trees")
    load_preset(page, words, "keyword")
    page.get_by_label(words["treeName"]).fill(name)
    page.get_by_label(words["corpusPath"]).fill("corpus")
    page.get_by_text(words["noErrors"]).wait_for()
    page.get_by_role("button", name=words["build"]).click()
    taken = page.locator(".name-taken")
    taken.wait_for()
    assert taken.locator(".failure-summary").inner_text() == words["nameExists"].format(name=name)
    assert "overwrite" not in taken.inner_text()
    taken.get_by_role("button", name=words["replaceTree"].format(name=name)).click()
    page.locator('.job[data-status="done"]').wait_for(timeout=120_000)


def test_a_cascade_stage_keeping_as_many_as_the_one_before_is_refused_at_the_slot(shown):
    page, words, _ = shown
    page.route("**/trees/validate", lambda route: route.fulfill(json={"valid": True, "errors": []}))  # the page alone
    stages = [{"component": "BM25Retriever", "params": {"top_k": 10}},
              {"component": "TFIDFRetriever", "params": {"top_k": 10}}]
    load_json(page, words, {"component": "SequentialRetriever", "params": {"children": stages}})
    template = META["SequentialRetriever"]["rule_messages"]["decreasing"][lang_of(words)]
    expected = template.format(i=1, x=10, j=0, y=10)
    slot = page.locator('section.node[data-path=""] > fieldset.slot[data-field="children"]')
    assert slot.locator("> ul.errors li").inner_text() == expected
    assert page.get_by_role("button", name=words["build"]).is_disabled()


@pytest.fixture(scope="module")
def keyless_server(tmp_path_factory) -> Iterator[str]:
    """A server whose operator allowed OPENAI_API_KEY (and an endpoint) but never set it."""
    env = {"RAG_ALLOW_CREDENTIALS": json.dumps(["OPENAI_API_KEY"]), "OPENAI_API_KEY": ""}  # blank: unset
    with serving(tmp_path_factory.mktemp("keyless"), env=env) as url:
        yield url


@pytest.mark.parametrize("size_lang", EACH_ONCE, ids=size_and_language)
def test_the_agentic_preset_fails_validation_naming_its_unset_key(size_lang, keyless_server, browser):
    width, height, lang = size_lang
    context = browser.new_context(viewport={"width": width, "height": height},
                                  locale="es-ES" if lang == "es" else "en-US")
    page = context.new_page()
    words = STRINGS[lang]
    try:
        page.goto(keyless_server + "/")
        load_preset(page, words, "agentic")
        var = "params.llm_model.params.credential"
        message = field(page, var, "var").locator('xpath=ancestor::div[contains(@class, "form-group")][1]')
        message.get_by_text("OPENAI_API_KEY is not set on the server").wait_for()
        link = page.locator(f'details.problems button.problem-link[data-path="{var}.params.var"]')
        assert "OPENAI_API_KEY" in link.inner_text()
        assert page.get_by_role("button", name=words["build"]).is_disabled()
    finally:
        context.close()

