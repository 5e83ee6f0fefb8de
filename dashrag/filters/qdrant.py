"""A filter as a Qdrant payload filter (``qdrant_client.models.Filter``) over ``filter_payload`` values.

Under the payload key ``filterable``: numbers and dates are ``Range`` conditions (a date as
seconds since 1970), strings and booleans ``MatchValue`` / ``MatchAny``, ``$exists`` a match on
``present``; Qdrant's rule for an array payload (a condition holds when any element satisfies
it) is the language's list rule. ``$and / $or / $not`` are ``must / should / must_not``.

What Qdrant cannot say returns None, and the caller sends the exact list of matching points
instead: ordering strings (Qdrant ranges are numeric), and field names that are not plain
identifiers (Qdrant reads dots and brackets in a key as a path).
"""

from __future__ import annotations

import re
from typing import Any

from dashrag.filters.ast import And, Compare, Exists, Filter, In, Not, Or
from dashrag.filters.values import Value

PAYLOAD_KEY = "filterable"
PLAIN_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RANGE_BOUND = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}


def payload_key(field: str, kind: str) -> str:
    return f"{PAYLOAD_KEY}.{'dates' if kind == 'date' else 'fields'}.{field}"


def to_qdrant(node: Filter) -> Any | None:
    """The Qdrant condition of ``node`` (a ``Filter`` or a ``FieldCondition``), None when Qdrant cannot say it."""
    from qdrant_client import models

    if isinstance(node, (Compare, In, Exists)) and not PLAIN_FIELD.match(node.field):
        return None
    if isinstance(node, Compare):
        return _compare(node.field, node.op, node.value)
    if isinstance(node, In):
        if not node.values:
            return models.Filter(must=[models.HasIdCondition(has_id=[])])
        first = node.values[0]
        if first.kind == "string":
            return models.FieldCondition(key=payload_key(node.field, "string"),
                                         match=models.MatchAny(any=[v.raw for v in node.values]))
        either: list[Any] = [_compare(node.field, "$eq", v) for v in node.values]
        return models.Filter(should=either)
    if isinstance(node, Exists):
        return models.FieldCondition(key=f"{PAYLOAD_KEY}.present", match=models.MatchValue(value=node.field))
    if isinstance(node, Not):
        part = to_qdrant(node.part)
        return None if part is None else models.Filter(must_not=[part])
    parts: list[Any] = [to_qdrant(p) for p in node.parts]
    if any(p is None for p in parts):
        return None
    if isinstance(node, And):
        return models.Filter(must=parts)
    if isinstance(node, Or):
        return models.Filter(should=parts)
    raise TypeError(f"not a filter node: {node!r}")


def _compare(field: str, op: str, value: Value) -> Any | None:
    from qdrant_client import models

    key = payload_key(field, value.kind)
    if value.kind in ("number", "date"):
        number = float(value.key)
        bounds = {"gte": number, "lte": number} if op == "$eq" else {RANGE_BOUND[op]: number}
        return models.FieldCondition(key=key, range=models.Range(**bounds))
    if op != "$eq":
        return None  # a string range: Qdrant's ranges are numeric
    return models.FieldCondition(key=key, match=models.MatchValue(value=value.raw))
