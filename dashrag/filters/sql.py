"""A filter as a SQLAlchemy expression over a PostgreSQL ``jsonb`` column holding ``filter_payload`` values.

Each comparison is one SQL/JSON path test, ``filterable @? '$.fields."year"[*] ? (@ >= 2015)'``:
the path's ``[*]`` is "any element", the path's comparison of a number with a string is
false (never an error), and the ``@?`` operator can use a GIN index (``jsonb_path_ops``).
The path text is a bound parameter (values written as JSON literals), so nothing from a
filter is ever spliced into SQL. ``$in`` is one ``jsonb[]`` array parameter: some element of the field's
list ``= ANY`` of it (jsonb equality compares numbers by value, as the path's ``==``), which PostgreSQL
hashes, so 10,000 values cost about what ten do (issue 38: a path of thousands of ``||`` took seconds).
``$and / $or / $not`` are SQL's AND / OR / NOT.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Iterator

from dashrag.filters.ast import And, Compare, Exists, Filter, In, Not, Or
from dashrag.filters.values import Value

PATH_OPERATORS = {"$eq": "==", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def to_sql(node: Filter, column: Any, names: Iterator[str] | None = None) -> Any:
    """The SQLAlchemy boolean expression of ``node`` over ``column`` (a jsonb column of filter payloads)."""
    from sqlalchemy import Boolean, and_, bindparam, cast, false, not_, or_, text, true, type_coerce
    from sqlalchemy.dialects.postgresql import JSONPATH

    names = names if names is not None else (f"filter_{i}" for i in itertools.count())

    def test(path: str) -> Any:
        return column.op("@?")(cast(bindparam(next(names), path), JSONPATH))

    if isinstance(node, Compare):
        return test(f"{_values_path(node.field, node.value)} ? (@ {PATH_OPERATORS[node.op]} {_literal(node.value)})")
    if isinstance(node, In):
        if not node.values:
            return false()
        # one array parameter whatever the number of values, compared with = ANY (hashed by PostgreSQL: 10,000
        # values cost what a few do; a path of 10,000 `||`, or @> ANY, is a scan of values per row, issue 38)
        kind, field, values = next(names), next(names), next(names)
        return type_coerce(text(
            f"EXISTS (SELECT 1 FROM jsonb_array_elements({column.name} -> :{kind} -> :{field}) AS e(v) "
            f"WHERE e.v = ANY(CAST(:{values} AS jsonb[])))").bindparams(**{
                kind: "dates" if node.values[0].kind == "date" else "fields", field: node.field,
                values: [_literal(v) for v in node.values]}), Boolean)  # a boolean expression NOT can negate
    if isinstance(node, Exists):
        return test(f"$.present[*] ? (@ == {json.dumps(node.field, ensure_ascii=False)})")
    if isinstance(node, Not):
        return not_(to_sql(node.part, column, names))
    if isinstance(node, And):
        return and_(true(), *(to_sql(p, column, names) for p in node.parts))
    if isinstance(node, Or):
        return or_(false(), *(to_sql(p, column, names) for p in node.parts))
    raise TypeError(f"not a filter node: {node!r}")


def _values_path(field: str, value: Value) -> str:
    where = "dates" if value.kind == "date" else "fields"
    return f"$.{where}.{json.dumps(field, ensure_ascii=False)}[*]"


def _literal(value: Value) -> str:
    return json.dumps(value.key if value.kind == "date" else value.raw, ensure_ascii=False)


def compile_where(expression: Any) -> tuple[str, dict[str, Any]]:
    """The expression as PostgreSQL text with ``:name`` parameters, and their values (for ``text()`` statements).

    Compiled for the psycopg2 dialect, which writes no ``::TYPE`` after a parameter (``text()`` would not see
    ``:name::VARCHAR`` as a parameter); the text runs on any PostgreSQL driver."""
    from sqlalchemy.dialects.postgresql import psycopg2

    compiled = expression.compile(dialect=psycopg2.dialect(paramstyle="named"))
    return str(compiled), dict(compiled.params)
