"""The page's words for every parameter, in English and Spanish: titles, help texts, choice labels, rule messages.

A component's name and description are registered with it (``@register(en=..., es=...)``); its
parameters' English comes from their pydantic ``Field`` (title, description). The Spanish of those,
the readable labels of every choice (``enum``) and the wording of each cross-field rule live in one
catalog, ``translations.json`` beside this module, rather than in each component module, so that a
translator edits one file and a new parameter shows up as one missing entry:

* ``titles_en`` and ``titles_es``: parameter name → its title in words (a name means the same in every
  component), so a form reads "Minimum document frequency", not pydantic's "Min Df" made from ``min_df``;
* ``descriptions_es``: the English description, verbatim → its Spanish. Keyed by the English text, so
  an English description that changes is missing its Spanish until someone translates it again;
* ``enum_labels``: a choice's value → ``{"en", "es"}`` label (the values of an ``enum`` / ``Literal``, and the
  usual values an open field lists under ``x-dashrag-choices``: a torch device);
* ``rule_messages``: a rule message id (:data:`RULE_MESSAGES`) → ``{"en", "es"}`` template with
  ``{placeholders}``, the same placeholders in both.

:func:`component_texts` resolves the catalog for one component; ``dashrag export-schemas`` writes it into
``frontend_meta/<Name>.json`` (``params``, ``rule_messages``), where the page reads it. A missing Spanish
entry is left out there (the page then shows the English); ``tests/core/test_translations.py`` fails on
any missing or unused entry of a built-in component and prints what to add.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from dashrag.core.params import CHOICES_KEY

CATALOG_PATH = Path(__file__).with_name("translations.json")
LANGUAGES = ("en", "es")
#: The messages each rule kind (``Rule.kind``) may show, by id in ``rule_messages``.
RULE_MESSAGES: dict[str, tuple[str, ...]] = {
    "le": ("le",),
    "lt": ("lt",),
    "same_length": ("same_length",),
    "sliding_window": ("sliding_window.slide", "sliding_window.stride"),
    "non_increasing": ("non_increasing",),
    "decreasing": ("decreasing",),
    "requires": ("requires",),
}
PLACEHOLDER = re.compile(r"\{(\w+)\}")


@cache
def catalog() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    return loaded


def english_title(field: str, prop: dict[str, Any]) -> str:
    """The catalog's English title; else pydantic's, or the field's name as words (component fields have none)."""
    title = catalog()["titles_en"].get(field) or prop.get("title")
    return str(title) if title else field.replace("_", " ").capitalize()


def enum_values(prop: dict[str, Any]) -> list[Any]:
    """The values a scalar parameter may take from a fixed list (``Literal[...]``, optionally ``| None``); None
    is not one of them (the page names it itself)."""
    values: list[Any] = list(prop.get(CHOICES_KEY, []))
    for alt in [prop, *prop.get("anyOf", [])]:
        if alt.get("x-value-aliases"):
            continue  # another spelling of "none" (DashAI's 0 for no limit), not a choice of its own
        for value in [*alt.get("enum", []), *([alt["const"]] if "const" in alt else [])]:
            if value is not None and value not in values:
                values.append(value)
    return values


def _both(en: str, es: str | None) -> dict[str, str]:
    return {"en": en, **({"es": es} if es else {})}


def param_texts(field: str, prop: dict[str, Any]) -> dict[str, Any]:
    """``{"title": {en, es}, "description"?: {en, es}, "enum_labels"?: [{value, en, es}]}`` for one parameter."""
    texts = catalog()
    result: dict[str, Any] = {"title": _both(english_title(field, prop), texts["titles_es"].get(field))}
    if prop.get("description"):
        result["description"] = _both(prop["description"], texts["descriptions_es"].get(prop["description"]))
    if not prop.get("x-component-kind"):
        labels = []
        for value in enum_values(prop):
            known = texts["enum_labels"].get(str(value), {})
            labels.append({"value": value, **_both(known.get("en") or str(value), known.get("es"))})
        if labels:
            result["enum_labels"] = labels
    return result


def component_texts(schema: dict[str, Any]) -> dict[str, Any]:
    """The words of one component's form, from its generated JSON Schema: ``params`` and ``rule_messages``."""
    messages = catalog()["rule_messages"]
    ids = [i for rule in schema.get("x-dashrag-rules", []) for i in RULE_MESSAGES.get(rule["rule"], ())]
    result: dict[str, Any] = {
        "params": {field: param_texts(field, prop) for field, prop in schema.get("properties", {}).items()}}
    if ids:
        result["rule_messages"] = {i: messages[i] for i in dict.fromkeys(ids) if i in messages}
    return result


def missing_translations(schemas: dict[str, dict[str, Any]]) -> list[str]:
    """What the catalog lacks for these component schemas (``{name: schema}``), one line each, as JSON to add."""
    texts = catalog()
    missing: list[str] = []
    for name, schema in schemas.items():
        for field, prop in schema.get("properties", {}).items():
            for table in ("titles_en", "titles_es"):
                if field not in texts[table]:
                    missing.append(f'{name}.{field}: "{table}": {json.dumps({field: "..."})}')
            description = prop.get("description")
            if description and description not in texts["descriptions_es"]:
                missing.append(f'{name}.{field}: "descriptions_es": {json.dumps({description: "..."})}')
            if not prop.get("x-component-kind"):
                for value in enum_values(prop):
                    if not {"en", "es"} <= set(texts["enum_labels"].get(str(value), {})):
                        missing.append(f'{name}.{field}: "enum_labels": '
                                       f'{json.dumps({str(value): {"en": "...", "es": "..."}})}')
        for rule in schema.get("x-dashrag-rules", []):
            ids = RULE_MESSAGES.get(rule["rule"])
            if ids is None:
                missing.append(f"{name}: rule kind {rule['rule']!r}: name its messages in RULE_MESSAGES")
            for i in ids or ():
                if not {"en", "es"} <= set(texts["rule_messages"].get(i, {})):
                    missing.append(f'{name}: "rule_messages": {json.dumps({i: {"en": "...", "es": "..."}})}')
    return list(dict.fromkeys(missing))


def unused_translations(schemas: dict[str, dict[str, Any]]) -> list[str]:
    """Catalog entries no component uses any more (a renamed parameter, a reworded description)."""
    texts = catalog()
    props = [(f, p) for schema in schemas.values() for f, p in schema.get("properties", {}).items()]
    rules = [r["rule"] for schema in schemas.values() for r in schema.get("x-dashrag-rules", [])]
    used_ids = {i for kind in rules for i in RULE_MESSAGES.get(kind, ())}
    fields = {f for f, _ in props}
    unused = [f"{table}: {k}" for table in ("titles_en", "titles_es") for k in texts[table] if k not in fields]
    descriptions = {p.get("description") for _, p in props}
    unused += [f"descriptions_es: {k}" for k in texts["descriptions_es"] if k not in descriptions]
    values = {str(v) for f, p in props if not p.get("x-component-kind") for v in enum_values(p)}
    unused += [f"enum_labels: {k}" for k in texts["enum_labels"] if k not in values]
    unused += [f"rule_messages: {k}" for k in texts["rule_messages"] if k not in used_ids]
    return unused


__all__ = ["CATALOG_PATH", "LANGUAGES", "RULE_MESSAGES", "catalog", "component_texts", "english_title",
           "enum_values", "missing_translations", "param_texts", "unused_translations"]
