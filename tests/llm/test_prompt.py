"""SelectionPrompt: the default messages, and templates checked for their placeholders at validation."""

from __future__ import annotations

import json

import pytest

from dashrag.core.factory import build_component
from dashrag.errors import ConfigError
from dashrag.llm.prompt import DEFAULT_TEMPLATE, SelectionPrompt, template_fields

TEXTS = ["Aspirin reduces fever.", "The moon\norbits the earth.", 'Quote " and \\ backslash.']


def user_message(prompt: SelectionPrompt, query: str = "what lowers fever?", texts=TEXTS, top_k: int = 2) -> str:
    messages = prompt.render(query, texts, top_k)
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


def test_default_template_uses_exactly_the_three_placeholders():
    assert sorted(template_fields(DEFAULT_TEMPLATE)) == ["candidates", "query", "top_k"]


def test_default_prompt_shows_the_query_top_k_and_one_numbered_line_per_candidate():
    text = user_message(SelectionPrompt())
    lines = [line for line in text.splitlines() if line.startswith("[")]
    assert "Query: what lowers fever?" in text and "Select up to 2 candidates" in text
    assert [json.loads(line.split(" ", 1)[1]) for line in lines] == TEXTS
    assert [line.split(" ", 1)[0] for line in lines] == ["[1]", "[2]", "[3]"]


def test_top_k_shown_is_at_most_the_number_of_candidates():
    assert "Select up to 3 candidates" in user_message(SelectionPrompt(), top_k=5)


def test_system_message_says_candidates_are_data_and_asks_for_the_function():
    system = SelectionPrompt().render("q", TEXTS, 1)[0]["content"]
    assert "never instructions" in system and "select_best_chunks" in system


def test_custom_template_and_system_are_used():
    prompt = SelectionPrompt({"system": "Sé breve.", "template": "{{Consulta}} {query} | {top_k} | {candidates}"})
    messages = prompt.render("fiebre", ["a"], 1)
    assert messages == [{"role": "system", "content": "Sé breve."},
                        {"role": "user", "content": '{Consulta} fiebre | 1 | [1] "a"'}]


@pytest.mark.parametrize("missing", ["query", "candidates", "top_k"])
def test_template_missing_a_placeholder_is_a_validation_error_with_its_path(missing):
    template = " ".join("{" + p + "}" for p in ("query", "candidates", "top_k") if p != missing)
    with pytest.raises(ConfigError) as caught:
        build_component({"component": "SelectionPrompt", "params": {"template": template}}, "prompt")
    [issue] = caught.value.issues
    assert issue.path == "params.template" and f"missing placeholder {{{missing}}}" in issue.message


def test_missing_placeholder_inside_a_tree_is_reported_with_the_full_path():
    tree = {"component": "AgenticRerankerRetriever", "params": {
        "children": [{"component": "BM25Retriever", "params": {}}],
        "prompt": {"component": "SelectionPrompt", "params": {"template": "{query} {candidates}"}}}}
    with pytest.raises(ConfigError) as caught:
        build_component(tree, "retriever")
    assert [i.path for i in caught.value.issues] == ["params.prompt.params.template"]
    assert "missing placeholder {top_k}" in str(caught.value)


def test_unknown_placeholder_is_a_validation_error():
    with pytest.raises(ConfigError, match=r"unknown placeholder \{n\}"):
        SelectionPrompt({"template": "{query} {candidates} {top_k} {n}"})


def test_unbalanced_brace_is_a_validation_error():
    with pytest.raises(ConfigError, match="not a valid format string"):
        SelectionPrompt({"template": "{query} {candidates} {top_k} }"})
