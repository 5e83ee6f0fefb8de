import json

import pytest
from jsonschema import Draft202012Validator

from dashrag.core.registry import all_components, get_component
from dashrag.core.schema import INDEX_FILE, component_schema, frontend_meta, rendered_exports
from tests.conftest import REPO

NAMES = [name for name, _ in all_components()]


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_valid_draft_2020_12(name):
    Draft202012Validator.check_schema(component_schema(get_component(name)))


@pytest.mark.parametrize("name", NAMES)
def test_schema_defaults_validate_against_the_schema(name):
    cls = get_component(name)
    defaults = cls.SCHEMA().model_dump(mode="json")
    Draft202012Validator(component_schema(cls)).validate(defaults)


def test_nested_component_field_names_its_kind_and_the_accepted_components():
    prop = component_schema(get_component("TFIDFRetriever"))["properties"]["vectorizer"]
    assert prop["x-component-kind"] == "vectorizer"
    assert "BagOfWordsConverter" in prop["x-accepts"]


def test_cross_field_rules_are_emitted():
    schema = component_schema(get_component("BagOfWordsConverter"))
    assert {"rule": "le", "fields": ["ngram_min", "ngram_max"]}.items() <= schema["x-dashrag-rules"][0].items()


@pytest.mark.parametrize("name", NAMES)
def test_frontend_meta_has_english_and_spanish(name):
    meta = frontend_meta(get_component(name))
    assert meta["display"]["en"]["name"] and meta["display"]["es"]["description"]
    assert meta["icon"] and meta["category"] and meta["representation"]


def test_checked_in_schemas_equal_the_code():
    """Changing a component without `dashrag export-schemas` fails here."""
    expected = rendered_exports()
    on_disk = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8")
               for folder in ("schemas", "frontend_meta") for p in (REPO / folder).glob("*.json")}
    on_disk[INDEX_FILE] = (REPO / INDEX_FILE).read_text(encoding="utf-8")
    stale = sorted(set(on_disk) ^ set(expected)) + sorted(
        k for k in expected if on_disk.get(k) not in (None, expected[k])
    )
    assert not stale, f"run `dashrag export-schemas`; out of date: {stale}"
    assert all(json.loads(text) for path, text in on_disk.items() if path.endswith(".json"))
