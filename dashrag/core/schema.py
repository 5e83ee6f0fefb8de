"""JSON Schema (Draft 2020-12) and UI metadata of a component, derived from its ``SCHEMA``.

pydantic writes the field schemas; this module adds what a form builder needs on
top: the component's title and description, ``x-dashrag-rules`` (the cross-field
rules), and for nested component fields the accepted kind (``x-component-kind``)
and the registered components of that kind (``x-accepts``), so a UI can draw a
picker. The schemas in ``schemas/`` and ``frontend_meta/`` are these functions'
output, checked in and compared to the code by a test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from dashrag.core.component import ConfigObject
from dashrag.core.params import ALIASES_KEY, RULES_KEY
from dashrag.core.registry import all_components, render_index

DIALECT = "https://json-schema.org/draft/2020-12/schema"
INDEX_FILE = "dashrag/component_index.py"  # name → module, so a lookup imports one module (core/registry.py)


def components_of_kind(kind: str) -> list[str]:
    return [name for name, cls in all_components() if cls.META.kind == kind]


def component_schema(cls: type[ConfigObject]) -> dict[str, Any]:
    """The JSON Schema of one component's ``params`` object."""
    schema = cls.SCHEMA.model_json_schema(mode="validation")
    schema.pop("title", None)
    properties = schema.get("properties", {})
    for field_name, (kind, _is_list) in cls.SCHEMA.component_fields().items():
        properties[field_name]["x-accepts"] = components_of_kind(kind)
    en = cls.META.display["en"]
    result = {
        "$schema": DIALECT,
        "$id": f"https://dashrag.dev/schemas/{cls.component_name}.json",
        "title": en.name,
        "description": en.description,
        "x-component": cls.component_name,
        "x-component-kind": cls.META.kind,
        **schema,
    }
    if cls.SCHEMA.ALIASES:
        result[ALIASES_KEY] = dict(cls.SCHEMA.ALIASES)  # accepted on input, normalised to the field's name
    rules = [rule.to_schema() for rule in cls.SCHEMA.RULES]
    if rules:
        result[RULES_KEY] = rules
    Draft202012Validator.check_schema(result)
    return result


def frontend_meta(cls: type[ConfigObject]) -> dict[str, Any]:
    """Everything the UI shows about a component besides the form itself."""
    nested = {
        field_name: {"kind": kind, "list": is_list, "accepts": components_of_kind(kind)}
        for field_name, (kind, is_list) in cls.SCHEMA.component_fields().items()
    }
    return {"component": cls.component_name, **cls.META.to_json(), "nested_fields": nested}


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def rendered_exports() -> dict[str, str]:
    """``{relative path: file text}`` for schemas/, frontend_meta/ and the component index, as export writes them."""
    files: dict[str, str] = {INDEX_FILE: render_index()}
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


__all__ = ["component_schema", "frontend_meta", "export_schemas", "rendered_exports"]
