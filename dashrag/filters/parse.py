"""Parsing a filter's JSON once into the syntax tree (``ast.py``); every error names the JSON path in the filter.

The language (docs/filters.md): an object whose keys are field names or ``$and`` / ``$or`` /
``$not``; a field maps to a bare value (``$eq``) or to an object of operators
``$eq $ne $gt $gte $lt $lte $in $nin $exists $not``. Several keys in one object must all
hold. A bare list or object is refused (``$in`` says "one of", an object is not comparable),
and so is ``null`` (``$exists`` says "missing"), so no filter silently matches nothing.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Mapping

from dashrag.errors import FilterError, excerpt
from dashrag.filters.ast import And, Compare, Exists, Filter, In, Not, Or, Order
from dashrag.filters.values import Value, comparable, describe

LOGICAL = ("$and", "$or", "$not")
COMPARISONS: dict[str, Order] = {"$eq": "$eq", "$ne": "$eq", "$gt": "$gt", "$gte": "$gte", "$lt": "$lt",
                                 "$lte": "$lte"}
OPERATORS = (*COMPARISONS, "$in", "$nin", "$exists", "$not")
MAX_DEPTH = 32
#: A filter's size (docs/filters.md, "Limits"): at most this many terms (each key of each object: a field,
#: ``$and``, ``$or``, ``$not``, and each operator inside a field, ``$gte``, ``$in``, ...) ...
MAX_TERMS = 1_000
#: ... and this many values in all its ``$in`` / ``$nin`` lists together. Hand-written and generated filters
#: stay far below both; a 1 MiB body could otherwise ask for 140,000 (issue 38: seconds of CPU per query).
MAX_VALUES = 10_000
MAX_NUMBER = int(sys.float_info.max)  # a larger JSON integer has no float: no engine can compare it
PLAIN_KEY = re.compile(r"^\$?[A-Za-z_][A-Za-z0-9_\-]*$")


class _Size:
    """What a filter has used of :data:`MAX_TERMS` and :data:`MAX_VALUES`, counted before each part is parsed."""

    def __init__(self) -> None:
        self.terms = self.values = 0

    def add_terms(self, count: int, path: str) -> None:
        self.terms += count
        if self.terms > MAX_TERMS:
            raise FilterError(path, f"the filter has more than {MAX_TERMS:,} terms (fields, operators, $and, $or, "
                                    "$not); split the query or match on fewer values")

    def add_values(self, count: int, path: str) -> None:
        self.values += count
        if self.values > MAX_VALUES:
            raise FilterError(path, f"the filter's $in / $nin lists hold more than {MAX_VALUES:,} values in all")


def parse_filter(raw: Any) -> Filter:
    """The syntax tree of a filter given as JSON (a dict, or its text); FilterError naming the path otherwise."""
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw, object_pairs_hook=_one_value_per_key)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise FilterError("$", f"not valid JSON ({getattr(exc, 'msg', exc)})") from None
        except _KeyTwice as exc:
            raise FilterError("$", f"the key {exc.key!r} appears twice in one object") from None
    return _filter(raw, "$", 0, _Size())


class _KeyTwice(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A filter's text with a key twice (``{"id": "a", "id": "b"}``) is ambiguous: refused, not last-key-wins."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _KeyTwice(key[:60])
        found[key] = value
    return found


def child_path(path: str, key: str) -> str:
    """``$.year``, ``$.$or``, or ``$["odd key"]`` for a key that is not a plain name."""
    if PLAIN_KEY.match(key) or key in OPERATORS or key in LOGICAL:
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=not key.isprintable())}]"  # a NUL or lone surrogate escaped


def _filter(raw: Any, path: str, depth: int, size: _Size) -> Filter:
    if depth > MAX_DEPTH:
        raise FilterError(path, f"nested deeper than {MAX_DEPTH} levels")
    if not isinstance(raw, Mapping):
        raise FilterError(path, f"a filter is a JSON object, not {_kind_of(raw)}")
    size.add_terms(max(1, len(raw)), path)  # each key (a field, $and, $or, $not); an empty {} counts too
    parts = [_entry(key, value, child_path(path, str(key)), depth, size) for key, value in raw.items()]
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def _entry(key: Any, value: Any, path: str, depth: int, size: _Size) -> Filter:
    if not isinstance(key, str) or not key:
        raise FilterError(path, "a field name must be a non-empty string")
    if key in ("$and", "$or"):
        if not isinstance(value, list) or not value:
            raise FilterError(path, f"{key} takes a non-empty list of filters, not {_kind_of(value)}")
        parts = tuple(_filter(item, f"{path}[{i}]", depth + 1, size) for i, item in enumerate(value))
        return And(parts) if key == "$and" else Or(parts)
    if key == "$not":
        return Not(_filter(value, path, depth + 1, size))
    if key.startswith("$"):
        raise FilterError(path, f"unknown operator {key!r} here (a filter's keys are field names or "
                                "$and, $or, $not; field operators go inside a field: {\"year\": {\"$gte\": 2015}})")
    return _field(_text(key, path, "field name"), value, path, depth, size)


def _field(name: str, value: Any, path: str, depth: int, size: _Size) -> Filter:
    if not isinstance(value, Mapping):
        if isinstance(value, list):
            raise FilterError(path, "a list is not a value to compare; use {\"$in\": [...]} for one of several")
        return Compare(name, "$eq", _scalar(value, path), path)
    if not value:
        raise FilterError(path, "an empty object: give an operator ($eq, $in, $gte, ...)")
    plain = [k for k in value if not (isinstance(k, str) and k.startswith("$"))]
    if plain:
        raise FilterError(child_path(path, str(plain[0])), "an object is not a value to compare; "
                                                           "a field takes a value or an object of operators")
    size.add_terms(len(value), path)
    parts = [_operator(name, op, operand, child_path(path, op), depth, size) for op, operand in value.items()]
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def _operator(name: str, op: str, operand: Any, path: str, depth: int, size: _Size) -> Filter:
    if op in COMPARISONS:
        value = _scalar(operand, path)
        if value.kind == "bool" and op not in ("$eq", "$ne"):
            raise FilterError(path, f"{op} orders values; a boolean has no order (use $eq)")
        compare = Compare(name, COMPARISONS[op], value, path)
        return Not(compare) if op == "$ne" else compare
    if op in ("$in", "$nin"):
        if not isinstance(operand, list):
            raise FilterError(path, f"{op} takes a list of values, not {_kind_of(operand)}")
        size.add_values(len(operand), path)
        values = tuple(_scalar(item, f"{path}[{i}]") for i, item in enumerate(operand))
        kinds = sorted({v.kind for v in values})
        if len(kinds) > 1:
            raise FilterError(path, f"{op} mixes {' and '.join(describe(k) for k in kinds)}; give values of one type")
        member = In(name, values, path)
        return Not(member) if op == "$nin" else member
    if op == "$exists":
        if not isinstance(operand, bool):
            raise FilterError(path, f"$exists takes true or false, not {_kind_of(operand)}")
        exists = Exists(name, path)
        return exists if operand else Not(exists)
    if op == "$not":
        if depth > MAX_DEPTH:
            raise FilterError(path, f"nested deeper than {MAX_DEPTH} levels")
        if not isinstance(operand, Mapping) or not operand:
            raise FilterError(path, "$not inside a field takes an object of operators: {\"$not\": {\"$gt\": 5}}")
        return Not(_field(name, operand, path, depth + 1, size))
    raise FilterError(path, f"unknown operator {op!r}; known: {', '.join(OPERATORS)}")


def _scalar(raw: Any, path: str) -> Value:
    if isinstance(raw, str):
        _text(raw, path, "string")
    if isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) > MAX_NUMBER:
        raise FilterError(path, f"the number ({excerpt(str(raw), 40)}) is out of range: beyond ±1.8e308, "
                                "no engine can compare it")
    value = comparable(raw)
    if value is not None:
        return value
    if raw is None:
        raise FilterError(path, "null is not a value to compare; use {\"$exists\": false} for a missing field")
    raise FilterError(path, f"{_kind_of(raw)} is not a value to compare (a number, a string, a date or a boolean)")


def _text(text: str, path: str, what: str) -> str:
    """A field name or string value every engine can store and compare: no NUL (PostgreSQL's text refuses it)
    and no lone surrogate (not UTF-8, so no engine can hold it); refused alike in process, on Qdrant and on
    PostgreSQL rather than matching in one and failing in another."""
    if "\x00" in text:
        raise FilterError(path, f"the {what} holds a NUL character (\\u0000), which no engine can compare")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise FilterError(path, f"the {what} holds a lone surrogate (\\ud800-\\udfff), which is not UTF-8 "
                                "text") from None
    return text


def _kind_of(raw: Any) -> str:
    if raw is None:
        return "null"
    if isinstance(raw, bool):
        return "a boolean"
    if isinstance(raw, (int, float)):
        return "a number" if raw == raw and abs(raw) != float("inf") else "a non-finite number"
    names: dict[type, str] = {str: "a string", list: "a list", dict: "an object"}
    return names.get(type(raw), type(raw).__name__)
