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
import re
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from dashrag.core.component import ConfigObject
from dashrag.core.digest import digest
from dashrag.core.params import ALIASES_KEY, RULES_KEY
from dashrag.core.registry import aliases_of, all_components, get_component, render_index
from dashrag.core.translations import component_texts

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_BASE = "https://dashrag.dev/schemas/"
SPEC_REF = "#/$defs/ComponentSpec"
INDEX_FILE = "dashrag/component_index.py"  # name → module, so a lookup imports one module (core/registry.py)


def components_of_kind(kind: str) -> list[str]:
    return [name for name, cls in all_components() if cls.META.kind == kind]


def schema_id(name: str) -> str:
    return f"{SCHEMA_BASE}{name}.json"


def inline_params_schema(name: str, extra: dict[str, Any]) -> dict[str, Any]:
    """Component ``name``'s params schema with ``extra`` properties accepted too, inline (a ``$ref`` to it could
    not be widened: it refuses unknown keys)."""
    own = component_schema(get_component(name))
    inline = {k: v for k, v in own.items() if k in ("type", "properties", "patternProperties", "allOf", "$defs",
                                                     "additionalProperties", "required")}
    inline["properties"] = {**inline.get("properties", {}), **extra}
    return inline


def node_schema(kind: str, extra_params: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{component, params}`` for one of the registered components of ``kind`` (or one of their aliases, DashAI's
    class names), params checked by its schema. A retriever node may carry its ``children`` beside ``params``
    (DashAI's tree builder writes nested composites so), never in both places."""
    names = components_of_kind(kind)
    spelled = [(name, name) for name in names] + [(alias, name) for name in names for alias in aliases_of(name)]
    properties: dict[str, Any] = {"component": {"enum": [written for written, _ in spelled]},
                                  "params": {"type": "object"}}
    beside: list[dict[str, Any]] = []
    if kind == "retriever":
        properties["children"] = {"type": "array", "items": {"$ref": f"#/$defs/{kind}_node"}}
        beside = [{"if": {"required": ["children"]},
                   "then": {"properties": {"params": {"properties": {"children": {"maxItems": 0}}}}}}]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["component"],
        "properties": properties,
        "allOf": [{"if": {"required": ["component"], "properties": {"component": {"const": written}}},
                   "then": {"properties": {"params": inline_params_schema(name, extra_params) if extra_params
                                           else {"$ref": f"{name}.json"}}}} for written, name in spelled] + beside,
    }


def _exactly(name: str) -> str:
    """A ``patternProperties`` key matching only ``name``."""
    return "^" + re.escape(name) + "$"


def _without_annotations(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prop.items() if k not in ("title", "description", "default")}


#: Value aliases the schema leaves out: DashAI's empty stop-word list would turn the page's stop-word choice
#: into an anyOf form (docs/reference_differences.md); validation accepts it.
NOT_IN_SCHEMA = "stop_words: []"


def _accept_value_aliases(prop: dict[str, Any], spellings: list[Any]) -> dict[str, Any]:
    """``prop`` accepting the reference's other spellings of its values too: added to its enum where it has one
    (so a form offers them), else as one more alternative."""
    spellings = [s for s in spellings if not isinstance(s, (list, dict))]  # NOT_IN_SCHEMA: the page's select
    if not spellings:
        return prop
    if "enum" in prop:
        return {**prop, "enum": [*prop["enum"], *spellings]}
    if "anyOf" in prop and any("enum" in alt for alt in prop["anyOf"]):
        return {**prop, "anyOf": [_accept_value_aliases(alt, spellings) if "enum" in alt else alt
                                  for alt in prop["anyOf"]]}
    alternatives = prop["anyOf"] if "anyOf" in prop else [_without_annotations(prop)]
    outer = {k: v for k, v in prop.items() if k in ("title", "description", "default")}
    return {**outer, "anyOf": [*alternatives, {"enum": spellings, "x-value-aliases": True}]}


def reference_spellings(cls: type[ConfigObject], properties: dict[str, Any]) -> tuple[dict, list[dict], dict]:
    """What the JSON Schema adds so a standard validator accepts what ``validate_and_transform`` accepts: the
    aliases of names (``patternProperties``, which forms do not draw), their values (in ``properties``), this
    node's fields given inside a nested node's params (``FROM_NESTED``: that field's node schema accepts them),
    and, for each alias, that a field is given under one name only (``allOf``). Returns the patterns, the
    ``allOf`` clauses and the ``$defs`` to add."""
    params = cls.SCHEMA
    patterns: dict[str, Any] = {}
    one_name: list[dict] = []
    definitions: dict[str, Any] = {}
    for field_name, spellings in params.VALUE_ALIASES.items():
        properties[field_name] = _accept_value_aliases(properties[field_name], [alias for alias, _ in spellings])
    for field_name, lifted in params.FROM_NESTED.items():
        kind = params.component_fields()[field_name][0]
        definitions[f"{kind}_node_with_{field_name}_extras"] = node_schema(
            kind, extra_params={name: _without_annotations(properties[name]) for name in lifted})
        properties[field_name] = _point_refs(properties[field_name], f"#/$defs/{kind}_node_with_{field_name}_extras",
                                             f"#/$defs/{kind}_node")
    for alias, field_name in params.ALIASES.items():
        patterns[_exactly(alias)] = {**properties[field_name], "x-alias-of": field_name}
        one_name.append({"not": {"required": [alias, field_name]}})
    for alias, fields in params.SPLIT_ALIASES.items():
        items = [_without_annotations(properties[f]) for f in fields]
        patterns[_exactly(alias)] = {"type": "array", "prefixItems": items, "minItems": len(items),
                                     "maxItems": len(items), "x-alias-of": list(fields)}
        one_name.extend({"not": {"required": [alias, f]}} for f in fields)
    return patterns, one_name, definitions


def _point_refs(value: Any, target: str, source: str = SPEC_REF) -> Any:
    """``value`` with every ``$ref`` to ``source`` (the generic ComponentSpec) pointed at ``target``."""
    if isinstance(value, dict):
        return {k: (target if k == "$ref" and v == source else _point_refs(v, target, source))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_point_refs(v, target, source) for v in value]
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
    patterns, one_name, extra_definitions = reference_spellings(cls, properties)
    if extra_definitions:
        result.setdefault("$defs", {}).update(extra_definitions)
    if patterns:
        result["patternProperties"] = patterns
    in_schema = [dict(rule.json_schema) for rule in cls.SCHEMA.RULES if rule.json_schema is not None] + one_name
    if in_schema:
        result["allOf"] = in_schema
    aliases = {**cls.SCHEMA.ALIASES, **{a: list(f) for a, f in cls.SCHEMA.SPLIT_ALIASES.items()}}
    if aliases:
        result[ALIASES_KEY] = aliases  # accepted on input, normalised to the field's name
    if aliases_of(cls.component_name):
        result["x-component-aliases"] = aliases_of(cls.component_name)  # DashAI's class names
    rules = [rule.to_schema() for rule in cls.SCHEMA.RULES]
    if rules:
        result[RULES_KEY] = rules
    _check_once(result)
    return result


_CHECKED: set[str] = set()  # digests of the schemas this process has already held to the metaschema


def _check_once(schema: dict[str, Any]) -> None:
    """Hold a generated schema to the Draft 2020-12 metaschema, once per distinct schema in a process.

    The check walks the whole metaschema (about 50 ms a component); every app start lists all components'
    schemas (the service's component list), so checking each again would cost most of a start. The same content
    gives the same digest, so a schema that changed (a component registered later widens ``x-accepts``) is
    checked anew."""
    key = digest(schema)
    if key not in _CHECKED:
        Draft202012Validator.check_schema(schema)
        _CHECKED.add(key)


FILTER_SCHEMA_FILE = "schemas/filter.schema.json"  # the metadata filter language (dashrag/filters/schema.py)


def frontend_meta(cls: type[ConfigObject]) -> dict[str, Any]:
    """Everything the UI shows about a component besides the form itself, and the words of the form in each
    language (``params``: title, help and choice labels; ``rule_messages``), from dashrag.core.translations."""
    nested = {
        field_name: {"kind": kind, "list": is_list, "accepts": components_of_kind(kind)}
        for field_name, (kind, is_list) in cls.SCHEMA.component_fields().items()
    }
    suggested = suggested_params(cls)
    return {"component": cls.component_name, **cls.META.to_json(), "nested_fields": nested,
            **({"suggested": suggested} if suggested else {}), **component_texts(component_schema(cls))}


def suggested_params(cls: type[ConfigObject]) -> dict[str, Any]:
    """The params a UI gives a node it adds by hand (``ComponentParams.SUGGESTED``), validated and normalised as
    a config would be (a nested component in full), so a form can take them as they are."""
    from dashrag.core.validation import validate_and_transform

    wanted = {k: v.model_dump() if hasattr(v, "model_dump") else v for k, v in cls.SCHEMA.SUGGESTED.items()}
    if not wanted:
        return {}
    params = validate_and_transform({"component": cls.component_name, "params": wanted}, cls.META.kind)["params"]
    return {k: params[k] for k in wanted}


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
