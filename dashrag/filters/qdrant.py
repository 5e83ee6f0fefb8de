"""A filter as a Qdrant payload filter over ``filter_payload`` values, for qdrant-client (``models.Filter``) and
for Qdrant Edge (``qdrant_edge.Filter``): the two spell the same conditions with a few other names (``Dialect``).

Under the payload key ``filterable``: numbers and dates are ``Range`` conditions (a date as
seconds since 1970), strings and booleans ``MatchValue`` / ``MatchAny``, ``$exists`` a match on
``present``; Qdrant's rule for an array payload (a condition holds when any element satisfies
it) is the language's list rule. ``$and / $or / $not`` are ``must / should / must_not``.

What Qdrant cannot say returns None, and the caller sends the exact list of matching points
instead: ordering strings (Qdrant ranges are numeric), field names that are not plain
identifiers (Qdrant reads dots and brackets in a key as a path), and on Edge 0.9 booleans
(its ``MatchValue(true)`` matched no point in the property test).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from dashrag.filters.ast import And, Compare, Exists, Filter, In, Not, Or
from dashrag.filters.values import Value

PAYLOAD_KEY = "filterable"
PLAIN_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RANGE_BOUND = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}


def payload_key(field: str, kind: str) -> str:
    return f"{PAYLOAD_KEY}.{'dates' if kind == 'date' else 'fields'}.{field}"


@dataclass(frozen=True)
class Dialect:
    """The condition classes of one Qdrant API, and how it says "no point"."""

    models: Any  # a module with FieldCondition, Filter, MatchValue, MatchAny
    range: Any  # the numeric range class
    nothing: Callable[[], Any]
    matches_booleans: bool = True  # Edge 0.9's MatchValue(True) matches no point: booleans go as point lists


def client_dialect() -> Dialect:
    from qdrant_client import models

    return Dialect(models, models.Range, lambda: models.HasIdCondition(has_id=[]))


def edge_dialect() -> Dialect:
    import qdrant_edge

    return Dialect(qdrant_edge, qdrant_edge.RangeFloat, lambda: qdrant_edge.HasIdCondition(point_ids=set()),
                   matches_booleans=False)


def to_qdrant(node: Filter, dialect: Dialect) -> Any | None:
    """The Qdrant condition of ``node`` (a ``Filter`` or a ``FieldCondition``), None when Qdrant cannot say it."""
    m = dialect.models
    if isinstance(node, (Compare, In, Exists)) and not PLAIN_FIELD.match(node.field):
        return None
    if isinstance(node, Compare):
        return _compare(node.field, node.op, node.value, dialect)
    if isinstance(node, In):
        if not node.values:
            return m.Filter(must=[dialect.nothing()])
        if node.values[0].kind == "string":
            return m.FieldCondition(key=payload_key(node.field, "string"),
                                    match=m.MatchAny(any=[v.raw for v in node.values]))
        either: list[Any] = [_compare(node.field, "$eq", v, dialect) for v in node.values]
        return None if any(e is None for e in either) else m.Filter(should=either)
    if isinstance(node, Exists):
        return m.FieldCondition(key=f"{PAYLOAD_KEY}.present", match=m.MatchValue(value=node.field))
    if isinstance(node, Not):
        part = to_qdrant(node.part, dialect)
        return None if part is None else m.Filter(must_not=[part])
    parts: list[Any] = [to_qdrant(p, dialect) for p in node.parts]
    if any(p is None for p in parts):
        return None
    if isinstance(node, And):
        return m.Filter(must=parts)
    if isinstance(node, Or):
        return m.Filter(should=parts)
    raise TypeError(f"not a filter node: {node!r}")


def _compare(field: str, op: str, value: Value, dialect: Dialect) -> Any | None:
    m = dialect.models
    key = payload_key(field, value.kind)
    if value.kind in ("number", "date"):
        number = float(value.key)
        bounds = {"gte": number, "lte": number} if op == "$eq" else {RANGE_BOUND[op]: number}
        return m.FieldCondition(key=key, range=dialect.range(**bounds))
    if op != "$eq" or (value.kind == "bool" and not dialect.matches_booleans):
        return None  # a string range (Qdrant's ranges are numeric), or a boolean Edge does not match
    return m.FieldCondition(key=key, match=m.MatchValue(value=value.raw))


PayloadIndex = tuple[str, str]  # (payload key, schema): "keyword", "float" or "bool"
INDEX_SCHEMA = {"string": "keyword", "number": "float", "date": "float", "bool": "bool"}


def payload_indexes(columns: Any) -> list[PayloadIndex]:
    """The payload indexes ``filterable`` is worth: ``present`` as a keyword, and one per field and kind it holds.

    Strings are ``keyword`` (MatchValue / MatchAny), numbers and dates ``float`` (a date is seconds since
    1970 under ``dates.NAME``, so one Range serves both; an ``integer`` index would not answer a range with
    a fractional bound), booleans ``bool``. Qdrant keeps one index per key: a field holding several kinds
    under ``fields.NAME`` (strings and numbers, say) gets none there, and its conditions read the payload.
    Without an index Qdrant reads every candidate's payload to test a condition (the 26-116x of a range on
    an unindexed number in bench/bench_filters.py)."""
    indexes: list[PayloadIndex] = [(f"{PAYLOAD_KEY}.present", "keyword")]
    for name in sorted(columns.fields):
        if not PLAIN_FIELD.match(name):
            continue  # such a field is never sent as a payload condition (to_qdrant)
        kinds = columns.kinds(name)
        if "date" in kinds:
            indexes.append((payload_key(name, "date"), "float"))
        plain = [kind for kind in kinds if kind != "date"]
        if len(plain) == 1:
            indexes.append((payload_key(name, plain[0]), INDEX_SCHEMA[plain[0]]))
    return indexes
