"""The filter's syntax tree: six node types, frozen, each leaf remembering where in the filter it was written.

``$ne``, ``$nin`` and ``$exists: false`` are parsed into ``Not`` of ``$eq``, ``$in`` and ``$exists``, so
every evaluator (mask, SQL, Qdrant) handles one negation, and the rule "a document without the
field does not equal 5" holds in all of them alike. ``And(())`` matches every document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dashrag.filters.values import Value

Order = Literal["$eq", "$gt", "$gte", "$lt", "$lte"]


@dataclass(frozen=True)
class Compare:
    """Some value of ``field`` (any element, for a list) compares ``op`` to ``value``."""

    field: str
    op: Order
    value: Value
    path: str


@dataclass(frozen=True)
class In:
    """Some value of ``field`` (any element, for a list) is one of ``values`` (all of one kind)."""

    field: str
    values: tuple[Value, ...]
    path: str


@dataclass(frozen=True)
class Exists:
    """The document has ``field`` with a value other than null or an empty list."""

    field: str
    path: str


@dataclass(frozen=True)
class And:
    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Not:
    part: Filter


Filter = Compare | In | Exists | And | Or | Not
NODE_TYPES = (Compare, In, Exists, And, Or, Not)


def node_count(node: Filter) -> int:
    """How many nodes ``node`` is made of (an ``In`` is one, whatever its values): what keeping it costs the
    garbage collector (filters/masks.py)."""
    count, pending = 0, [node]
    while pending:
        current = pending.pop()
        count += 1
        if isinstance(current, (And, Or)):
            pending.extend(current.parts)
        elif isinstance(current, Not):
            pending.append(current.part)
    return count
