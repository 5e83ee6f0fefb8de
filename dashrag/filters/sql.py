"""A filter as a SQLAlchemy expression over a PostgreSQL ``jsonb`` column holding ``filter_payload`` values.

Each comparison is one SQL/JSON path test, ``filterable @? '$.fields."year"[*] ? (@ >= 2015)'``:
the path's ``[*]`` is "any element", the path's comparison of a number with a string is
false (never an error), and the ``@?`` operator can use a GIN index (``jsonb_path_ops``).
The path text is a bound parameter (values written as JSON literals), so nothing from a
filter is ever spliced into SQL. ``$in`` is one ``jsonb[]`` array parameter, ``filterable @> ANY(...)``
(containment also reads "any element" and compares numbers by value, and it also uses the GIN
index), so its cost does not grow with a path of thousands of ``||`` (issue 38).
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
    from sqlalchemy import ARRAY, and_, any_, bindparam, cast, false, not_, or_, true
    from sqlalchemy.dialects.postgresql import JSONB, JSONPATH

    names = names if names is not None else (f"filter_{i}" for i in itertools.count())

    def test(path: str) -> Any:
        return column.op("@?")(cast(bindparam(next(names), path), JSONPATH))

    if isinstance(node, Compare):
        return test(f"{_values_path(node.field, node.value)} ? (@ {PATH_OPERATORS[node.op]} {_literal(node.value)})")
    if isinstance(node, In):
        if not node.values:
            return false()
        # one array parameter, whatever the number of values: the payload contains {"fields": {name: [value]}}
        # for any of them (jsonb containment: "any element", numbers by value, as the path test above)
        where = "dates" if node.values[0].kind == "date" else "fields"
        members = [json.dumps({where: {node.field: [_member(v)]}}, ensure_ascii=False) for v in node.values]
        return column.op("@>")(any_(cast(bindparam(next(names), members), ARRAY(JSONB))))
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


def _member(value: Value) -> Any:
    return value.key if value.kind == "date" else value.raw


def _literal(value: Value) -> str:
    return json.dumps(_member(value), ensure_ascii=False)


def compile_where(expression: Any) -> tuple[str, dict[str, Any]]:
    """The expression as PostgreSQL text with ``:name`` parameters, and their values (for ``text()`` statements).

    Compiled for the psycopg2 dialect, which writes no ``::TYPE`` after a parameter (``text()`` would not see
    ``:name::VARCHAR`` as a parameter); the text runs on any PostgreSQL driver."""
    from sqlalchemy.dialects.postgresql import psycopg2

    compiled = expression.compile(dialect=psycopg2.dialect(paramstyle="named"))
    return str(compiled), dict(compiled.params)
