"""Syntax tree back to query text, with as few parentheses as the tree allows.

The text of a branch is what branch-level reranking sends to the reranker and what
the trace shows, so it must read like what the user typed; and it must parse back
to the same tree (``parse(serialise(t)) == t``). Parentheses appear only where the
precedence (NOT > AND > OR) would otherwise regroup the operands, or where the tree
nests an operator inside the same operator (``(a AND b) AND c``), a grouping the
user wrote and that changes AND's scores.

Category values are written bare when they read back unchanged as a bare value and
double-quoted otherwise (spaces, commas, parentheses, quotes, ``=``, a keyword).
"""

from __future__ import annotations

from dashrag.boolean.ast import KEYWORDS, And, Category, Not, Or, Query, Semantic, Text, TrueNode
from dashrag.boolean.lexer import escape_literal

_PRECEDENCE = {Or: 1, And: 2, Not: 3}
_CLAUSE_PRECEDENCE = 4
_BARE_FORBIDDEN = frozenset("(),=\"'")


def serialise(node: Query, memo: dict[int, str] | None = None) -> str:
    """The query text of ``node``; ``TrueNode()`` is the empty string.

    ``memo`` (``id(node) -> text``, for nodes that stay alive while it is used) lets a
    caller that writes every node of a tree bottom-up (the evaluator's trace) write each
    subtree once.
    """
    if isinstance(node, TrueNode):
        return ""
    if memo is None:
        return _write(node)
    text = memo.get(id(node))
    if text is None:
        text = memo[id(node)] = _write(node, memo)
    return text


def _precedence(node: Query) -> int:
    return _PRECEDENCE.get(type(node), _CLAUSE_PRECEDENCE)


def _operand(child: Query, parent_precedence: int, memo: dict[int, str] | None) -> str:
    """An operand of an AND or OR: parenthesised when it binds no tighter than its parent."""
    text = serialise(child, memo) if memo is not None else _write(child)
    return f"({text})" if _precedence(child) <= parent_precedence else text


def _write(node: Query, memo: dict[int, str] | None = None) -> str:
    if isinstance(node, Semantic):
        return escape_literal(node.phrase, '"')
    if isinstance(node, Text):
        return ("@" if node.case_sensitive else "") + escape_literal(node.text, "'")
    if isinstance(node, Category):
        return f"{node.name}=" + ",".join(_value(v) for v in node.values)
    if isinstance(node, Not):
        operand = serialise(node.operand, memo) if memo is not None else _write(node.operand)
        return f"NOT ({operand})" if _precedence(node.operand) < _PRECEDENCE[Not] else f"NOT {operand}"
    if isinstance(node, (And, Or)):
        keyword = " AND " if isinstance(node, And) else " OR "
        return keyword.join(_operand(child, _PRECEDENCE[type(node)], memo) for child in node.operands)
    raise TypeError(f"cannot serialise {node!r}")


def is_bare_value(value: str) -> bool:
    """Whether ``value`` reads back as itself without quotes."""
    return (
        value != ""
        and value not in KEYWORDS
        and not any(ch.isspace() or ch in _BARE_FORBIDDEN for ch in value)
    )


def _value(value: str) -> str:
    return value if is_bare_value(value) else escape_literal(value, '"')
