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


def test_a_schema_is_held_to_the_metaschema_whether_or_not_one_was_checked_before():
    """The metaschema check runs once per distinct schema in a process (an app start lists every component's):
    a schema already seen passes without a second walk, but one that differs, even by a value, is checked."""
    from jsonschema.exceptions import SchemaError

    from dashrag.core.schema import _check_once

    good = component_schema(get_component("BM25Retriever"))
    _check_once(good)
    _check_once(good)
    bad = {**good, "properties": {**good["properties"], "top_k": {"type": "integer", "minimum": "one"}}}
    for _ in range(2):  # refused each time: a refused schema is never remembered as checked
        with pytest.raises(SchemaError):
            _check_once(bad)


def _registry(schemas):
    """The generated schemas by ``$id``: a nested component's params ``$ref`` its own component's schema."""
    from referencing import Registry, Resource

    return Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)


@pytest.mark.parametrize("name", NAMES)
def test_schema_defaults_validate_against_the_schema(name):
    cls = get_component(name)
    defaults = cls.SCHEMA().model_dump(mode="json")
    registry = _registry(component_schema(get_component(n)) for n in NAMES)
    Draft202012Validator(component_schema(cls), registry=registry).validate(defaults)


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


# --- the generated schemas are enough to validate a whole tree, as the web page does --------------------------

BROKEN = json.loads((REPO / "tests" / "data" / "broken_configs.json").read_text(encoding="utf-8"))
PRESETS = sorted((REPO / "components").glob("*.json"))


def _le(p, a, b):
    return p.get(a) is not None and p.get(b) is not None and p[a] > p[b]


def _lt(p, a, b):
    return p.get(a) is not None and p.get(b) is not None and p[a] >= p[b]


def _sliding_window(p):
    if p.get("window_size") is None:
        return False
    stride = p["window_stride"] if p.get("window_stride") is not None else p["window_size"] - p["top_k"]
    return stride < 1 or p["top_k"] + stride > p["window_size"]


RULE_CHECKS = {
    "le": lambda p, fields: _le(p, *fields),
    "lt": lambda p, fields: _lt(p, *fields),
    "same_length": lambda p, f: p.get(f[0]) is not None and len(p[f[0]]) != len(p[f[1]]),
    "sliding_window": lambda p, _f: _sliding_window(p),
    "non_increasing": lambda p, _f: any(
        a is not None and b is not None and b > a
        for a, b in zip(*(lambda s: (s, s[1:]))([c["params"].get("top_k") for c in p["children"]]))),
    "decreasing": lambda p, _f: any(
        a is not None and b == a
        for a, b in zip(*(lambda s: (s, s[1:]))([c["params"].get("top_k") for c in p["children"]]))),
}


def _schemas() -> dict[str, dict]:
    return {name: json.loads((REPO / "schemas" / f"{name}.json").read_text(encoding="utf-8")) for name in NAMES}


def _tree_validator(schemas: dict[str, dict]) -> Draft202012Validator:
    """A standard validator over a retriever tree, resolving each node's params to its component's schema."""
    from dashrag.core.schema import node_schema, schema_id

    registry = _registry(schemas.values())
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id("tree"),
            **node_schema("retriever")}
    return Draft202012Validator(root, registry=registry)


def _rule_paths(node: dict, schemas: dict[str, dict], path: str = "") -> list[str]:
    """Where the rules the schemas list but JSON Schema cannot state fail, reading only the schemas:
    params over their schema defaults, rules marked ``in_schema`` skipped (the validator checks those)."""
    schema = schemas.get(str(node.get("component")), {})
    props = schema.get("properties", {})
    params = {k: v["default"] for k, v in props.items() if "default" in v} | node.get("params", {})
    prefix = f"{path}.params" if path else "params"
    found = [f"{prefix}.{rule['at']}" for rule in schema.get("x-dashrag-rules", [])
             if not rule.get("in_schema") and RULE_CHECKS[rule["rule"]](params, rule["fields"])]
    for field, prop in props.items():
        if "x-component-kind" in prop and isinstance(params.get(field), (dict, list)):
            values = params[field] if isinstance(params[field], list) else [params[field]]
            for i, child in enumerate(values):
                where = f"{prefix}.{field}[{i}]" if isinstance(params[field], list) else f"{prefix}.{field}"
                found += _rule_paths(child, schemas, where)
    return found


def _schema_error_paths(validator: Draft202012Validator, config: dict) -> set[str]:
    from dashrag.core.validation import join_path

    paths = set()
    for error in validator.iter_errors(config):
        for leaf in (error.context or [error]) if error.validator in ("allOf", "anyOf", "oneOf") else [error]:
            where = ""
            for key in leaf.absolute_path:
                where = join_path(where, key)
            if leaf.validator == "required":
                where = join_path(where, leaf.message.split("'")[1])
            elif leaf.validator == "additionalProperties":
                where = join_path(where, leaf.message.split("'")[1])
            paths.add(where)
    return paths


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_every_preset_validates_against_the_generated_schemas(preset):
    schemas = _schemas()
    config = json.loads(preset.read_text(encoding="utf-8"))
    assert list(_tree_validator(schemas).iter_errors(config)) == []
    assert _rule_paths(config, schemas) == []


@pytest.mark.parametrize("case", BROKEN, ids=lambda c: c["name"])
def test_a_config_the_server_rejects_the_generated_schemas_reject_at_the_same_field(case):
    from dashrag.core.validation import validate_and_transform
    from dashrag.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        validate_and_transform(case["config"], "retriever")
    assert case["path"] in [issue.path for issue in info.value.issues]
    schemas = _schemas()
    found = _schema_error_paths(_tree_validator(schemas), case["config"]) | set(_rule_paths(case["config"], schemas))
    assert case["path"] in found, found


@pytest.mark.parametrize("name", NAMES)
def test_a_nested_component_default_is_the_full_tree_of_real_defaults(name):
    from dashrag.core.validation import validate_and_transform

    cls = get_component(name)
    props = component_schema(cls)["properties"]
    for field, (kind, is_list) in cls.SCHEMA.component_fields().items():
        default = props[field]["default"]
        for node in (default if is_list else [default] if default is not None else []):
            assert node == validate_and_transform(node, kind)


def test_a_rule_violation_is_reported_at_the_field_it_concerns():
    from dashrag.core.validation import validate_and_transform
    from dashrag.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        validate_and_transform({"component": "AgenticRerankerRetriever", "params": {"k1": 5, "top_k": 7}})
    assert [str(i) for i in info.value.issues] == ["params.top_k: top_k (7) must be <= k1 (5)"]
