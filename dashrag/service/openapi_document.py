"""The OpenAPI document as client generators read it (docs/service.md, "OpenAPI for client generators").

FastAPI derives the document from the routes and models; three things in it trip generators that
nobody here wrote, so the served document is that one with three changes:

* **Defaults in request bodies.** openapi-typescript types a property with a ``default`` as always
  present (right for a response, which always carries it; wrong for a request, which may leave it
  out), so ``limit`` and ``trace`` became required in ``tsc --strict``. A schema used only by request
  bodies therefore states its defaults in the property's description ("Default: 15.") instead of
  ``default``: every generator then makes those fields optional, and the service fills them in.
* **Inline JSON bodies** (routes that take their body by hand) are named components, so a
  generated client's model is ``BuildRequest``, not ``BuildTreeBuildRequest``.
* **Security stated everywhere**: ``/health`` says it needs nothing (``security: []``), and a
  service without a token says so at the root, as Redocly's ``security-defined`` rule asks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

REF = "#/components/schemas/"


def for_generators(document: dict[str, Any], guarded: bool) -> dict[str, Any]:
    """``document`` (FastAPI's) changed as the module says; ``guarded``: a bearer token is required."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for operation in _operations(document):
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None and "$ref" not in body["schema"] and body["schema"].get("title"):
            name = body["schema"]["title"].replace(" ", "")
            schemas[name] = body["schema"]
            body["schema"] = {"$ref": REF + name}
    requested = _reachable(schemas, [op.get("requestBody", {}) for op in _operations(document)])
    answered = _reachable(schemas, [op.get("responses", {}) for op in _operations(document)])
    for name in requested - answered:
        _defaults_described(schemas[name])
    document["paths"]["/health"]["get"]["security"] = []
    if not guarded:
        document["security"] = []
    return document


def _defaults_described(schema: Any) -> None:
    """Every property's ``default`` inside ``schema`` (nested objects too) moved into its description."""
    if isinstance(schema, list):
        for item in schema:
            _defaults_described(item)
    if not isinstance(schema, dict):
        return
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict) and "default" in prop:
            default = prop.pop("default")
            prop["description"] = f"{prop.get('description', '').rstrip()} Default: {json.dumps(default)}.".strip()
    for value in schema.values():
        _defaults_described(value)


def _operations(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for methods in document["paths"].values():
        yield from methods.values()


def _reachable(schemas: dict[str, Any], roots: list[Any]) -> set[str]:
    """The component schemas that ``roots`` refer to, directly or through other schemas."""
    found: set[str] = set()
    pending = [ref for root in roots for ref in _refs(root)]
    while pending:
        name = pending.pop()
        if name not in found and name in schemas:
            found.add(name)
            pending.extend(_refs(schemas[name]))
    return found


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF):
            yield ref[len(REF):]
        for item in value.values():
            yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)
