"""JSON Schema (Draft 2020-12) and UI metadata of a component, derived from its ``SCHEMA``.

pydantic writes the field schemas; this module adds what a form builder needs on
top: the component's title and description, ``x-dashrag-rules`` (the cross-field
rules), and for nested component fields the accepted kind (``x-component-kind``)
and the registered components of that kind (``x-accepts``), so a UI can draw a
picker. The schemas in ``schemas/`` and ``frontend_meta/`` are these functions'
output, checked in and compared to the code by a test.

The schemas are complete enough to validate a whole tree with any Draft 2020-12
validator (the web page uses ajv, the tests jsonschema): a nested component field
points at ``$defs/<kind>_node``, which allows only the registered components of that
kind and validates each one's ``params`` against that component's own schema
(``$ref: "<Name>.json"``, resolved against ``$id``). A nested field's ``default`` is
the full ``{component, params}`` tree of the real defaults. Cross-field rules that
JSON Schema can state are in ``allOf``; the others stay in ``x-dashrag-rules`` only,
for the page to evaluate (each names the field it is reported at).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from dashrag.core.component import ConfigObject
from dashrag.core.params import ALIASES_KEY, RULES_KEY
from dashrag.core.registry import all_components, render_index
from dashrag.core.translations import component_texts

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_BASE = "https://dashrag.dev/schemas/"
SPEC_REF = "#/$defs/ComponentSpec"
INDEX_FILE = "dashrag/component_index.py"  # name → module, so a lookup imports one module (core/registry.py)


def components_of_kind(kind: str) -> list[str]:
    return [name for name, cls in all_components() if cls.META.kind == kind]


def schema_id(name: str) -> str:
    return f"{SCHEMA_BASE}{name}.json"


def node_schema(kind: str) -> dict[str, Any]:
    """``{component, params}`` for one of the registered components of ``kind``, params checked by its schema."""
    names = components_of_kind(kind)
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["component"],
        "properties": {"component": {"enum": names}, "params": {"type": "object"}},
        "allOf": [{"if": {"required": ["component"], "properties": {"component": {"const": name}}},
                   "then": {"properties": {"params": {"$ref": f"{name}.json"}}}} for name in names],
    }


def _point_refs(value: Any, target: str) -> Any:
    """``value`` with every ``$ref`` to the generic ComponentSpec pointed at ``target``."""
    if isinstance(value, dict):
        return {k: (target if k == "$ref" and v == SPEC_REF else _point_refs(v, target)) for k, v in value.items()}
    if isinstance(value, list):
        return [_point_refs(v, target) for v in value]
    return value


def nested_default(cls: type[ConfigObject], field_name: str, kind: str) -> Any:
    """The field's default as the normalised tree (every nested default filled in), or None."""
    from dashrag.core.validation import validate_and_transform

    default = cls.SCHEMA.model_fields[field_name].get_default(call_default_factory=True)
    if default is None:
        return None
    if isinstance(default, list):
        return [validate_and_transform(item.model_dump(), kind) for item in default]
    return validate_and_transform(default.model_dump(), kind)


def component_schema(cls: type[ConfigObject]) -> dict[str, Any]:
    """The JSON Schema of one component's ``params`` object."""
    schema = cls.SCHEMA.model_json_schema(mode="validation")
    schema.pop("title", None)
    properties = schema.get("properties", {})
    definitions = schema.get("$defs", {})
    for field_name, (kind, _is_list) in cls.SCHEMA.component_fields().items():
        definitions[f"{kind}_node"] = node_schema(kind)
        prop = _point_refs(properties[field_name], f"#/$defs/{kind}_node")
        prop["default"] = nested_default(cls, field_name, kind)
        prop["x-accepts"] = components_of_kind(kind)
        properties[field_name] = prop
    if SPEC_REF not in json.dumps(properties):
        definitions.pop("ComponentSpec", None)
    if not definitions:
        schema.pop("$defs", None)
    en = cls.META.display["en"]
    result = {
        "$schema": DIALECT,
        "$id": schema_id(cls.component_name),
        "title": en.name,
        "description": en.description,
        "x-component": cls.component_name,
        "x-component-kind": cls.META.kind,
        **schema,
    }
    in_schema = [dict(rule.json_schema) for rule in cls.SCHEMA.RULES if rule.json_schema is not None]
    if in_schema:
        result["allOf"] = in_schema
    if cls.SCHEMA.ALIASES:
        result[ALIASES_KEY] = dict(cls.SCHEMA.ALIASES)  # accepted on input, normalised to the field's name
    rules = [rule.to_schema() for rule in cls.SCHEMA.RULES]
    if rules:
        result[RULES_KEY] = rules
    Draft202012Validator.check_schema(result)
    return result


FILTER_SCHEMA_FILE = "schemas/filter.schema.json"  # the metadata filter language (dashrag/filters/schema.py)


def frontend_meta(cls: type[ConfigObject]) -> dict[str, Any]:
    """Everything the UI shows about a component besides the form itself, and the words of the form in each
    language (``params``: title, help and choice labels; ``rule_messages``), from dashrag.core.translations."""
    nested = {
        field_name: {"kind": kind, "list": is_list, "accepts": components_of_kind(kind)}
        for field_name, (kind, is_list) in cls.SCHEMA.component_fields().items()
    }
    return {"component": cls.component_name, **cls.META.to_json(), "nested_fields": nested,
            **component_texts(component_schema(cls))}


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def rendered_exports() -> dict[str, str]:
    """``{relative path: file text}`` for schemas/, frontend_meta/ and the component index, as export writes them."""
    from dashrag.filters import filter_schema

    files: dict[str, str] = {INDEX_FILE: render_index(), FILTER_SCHEMA_FILE: _dump(filter_schema())}
    for name, cls in all_components():
        files[f"schemas/{name}.json"] = _dump(component_schema(cls))
        files[f"frontend_meta/{name}.json"] = _dump(frontend_meta(cls))
    return files


def export_schemas(root: Path) -> list[Path]:
    """Regenerate schemas/, frontend_meta/ and the component index under ``root``; stale files are removed."""
    from dashrag.core.persistence import atomic_write_text

    files = rendered_exports()
    written = []
    for folder in ("schemas", "frontend_meta"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for stale in (root / folder).glob("*.json"):
            if f"{folder}/{stale.name}" not in files:
                stale.unlink()
    for rel, text in files.items():
        atomic_write_text(root / rel, text)
        written.append(root / rel)
    return written


__all__ = ["component_schema", "frontend_meta", "export_schemas", "node_schema", "rendered_exports", "schema_id"]
