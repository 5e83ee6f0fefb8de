"""The Spanish catalog covers every built-in component, and its English rule messages are the server's words."""

from __future__ import annotations

import pytest

from dashrag.core.registry import all_components
from dashrag.core.schema import component_schema, frontend_meta
from dashrag.core.translations import PLACEHOLDER, catalog, missing_translations, unused_translations
from dashrag.core.validation import validate_and_transform
from dashrag.errors import ConfigError

SCHEMAS = {name: component_schema(cls) for name, cls in all_components()}


def test_every_parameter_title_description_choice_and_rule_has_its_spanish():
    missing = missing_translations(SCHEMAS)
    assert missing == [], "add to dashrag/core/translations.json, then `dashrag export-schemas`:\n" + "\n".join(missing)


def test_a_new_parameter_without_spanish_is_reported():
    schema = {"properties": {"brand_new": {"type": "string", "description": "A new knob.", "enum": ["fast", "slow"]}},
              "x-dashrag-rules": [{"rule": "le", "fields": ["a", "b"]}, {"rule": "new_kind", "fields": ["a"]}]}
    missing = missing_translations({"NewComponent": schema})
    assert [line.split(":", 2)[1].strip() for line in missing] == [
        '"titles_en"', '"titles_es"', '"descriptions_es"', '"enum_labels"', '"enum_labels"', "rule kind 'new_kind'"]


def test_the_catalog_holds_no_entry_that_no_component_uses():
    assert unused_translations(SCHEMAS) == []


def test_every_spanish_text_keeps_the_english_placeholders():
    texts = catalog()
    pairs = [(en, es) for en, es in texts["descriptions_es"].items()]
    pairs += [(m["en"], m["es"]) for m in texts["rule_messages"].values()]
    for en, es in pairs:
        assert sorted(PLACEHOLDER.findall(en)) == sorted(PLACEHOLDER.findall(es)), (en, es)


def test_frontend_meta_carries_each_parameters_words_in_both_languages():
    meta = frontend_meta(dict(all_components())["AgenticRerankerRetriever"])
    top_k = meta["params"]["top_k"]
    assert top_k["title"] == {"en": "Results", "es": "Cuántos devolver"}
    assert top_k["description"]["es"] == "Cuántos fragmentos elige el modelo como máximo; a lo sumo k1."
    assert meta["rule_messages"]["le"]["es"] == "{a} ({x}) debe ser <= {b} ({y})"
    merge = frontend_meta(dict(all_components())["ParallelRetriever"])["params"]["merge_strategy"]
    assert {"value": "round_robin", "en": "Round robin", "es": "Por turnos"} in merge["enum_labels"]


def _server_says(config: dict) -> str:
    with pytest.raises(ConfigError) as caught:
        validate_and_transform(config)
    (issue,) = caught.value.issues
    return issue.message


def _fill(message_id: str, **values: object) -> str:
    return catalog()["rule_messages"][message_id]["en"].format(**values)


def _leaf(top_k: int) -> dict:
    return {"component": "BM25Retriever", "params": {"top_k": top_k}}


@pytest.mark.parametrize(("config", "message_id", "values"), [
    ({"component": "AgenticRerankerRetriever", "params": {"top_k": 20, "k1": 10}},
     "le", {"a": "top_k", "x": 20, "b": "k1", "y": 10}),
    ({"component": "ParallelRetriever", "params": {"children": [_leaf(5), _leaf(5)], "weights": [1.0]}},
     "same_length", {"a": "weights", "n": 1, "b": "children", "m": 2}),
    ({"component": "AgenticRerankerRetriever", "params": {"top_k": 5, "window_size": 5}},
     "sliding_window.slide", {"w": 5, "k": 5}),
    ({"component": "AgenticRerankerRetriever", "params": {"top_k": 5, "window_size": 8, "window_stride": 4}},
     "sliding_window.stride", {"k": 5, "s": 4, "w": 8}),
    ({"component": "SequentialRetriever", "params": {"children": [_leaf(5), _leaf(9)]}},
     "non_increasing", {"i": 1, "x": 9, "j": 0, "y": 5}),
    ({"component": "SequentialRetriever", "params": {"children": [_leaf(5), _leaf(5)]}},
     "decreasing", {"i": 1, "x": 5, "j": 0, "y": 5}),
], ids=["le", "same_length", "slide", "stride", "non_increasing", "decreasing"])
def test_the_english_rule_message_is_the_servers_own(config, message_id, values):
    assert _server_says(config) == _fill(message_id, **values)


def test_the_english_lt_message_is_the_chunkers_own():
    with pytest.raises(ConfigError) as caught:
        validate_and_transform({"component": "TokenChunker", "params": {"chunk_size": 10, "chunk_overlap": 10}},
                               "chunker")
    (issue,) = caught.value.issues
    assert issue.message == _fill("lt", a="chunk_overlap", x=10, b="chunk_size", y=10)
