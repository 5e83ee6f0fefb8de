"""The syntax tree of a boolean query: immutable nodes that compare by value.

One tree serves parsing, serialising (a branch's text is what its reranking uses),
validation and evaluation, so every stage agrees on what the user wrote.

``And`` and ``Or`` are n-ary: ``a AND b AND c`` is one ``And`` of three operands,
while ``(a AND b) AND c`` keeps its parentheses as a nested ``And``. The two are
not interchangeable, because AND's score combination (a geometric mean over the
operands that carry scores) is not associative; keeping the user's grouping in
the tree is what lets ``parse(serialise(tree)) == tree`` hold.

``TrueNode`` (the empty query, "no restriction") only stands for a whole query; it
cannot be an operand, since the language has no keyword for it.

Clause nodes carry the 1-based column where they started (``column``), excluded
from equality, so an error found after parsing (an unknown category name) can still
point at the place in the query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dashrag.boolean.normalise_text import normalise_words
from dashrag.errors import QueryError

KEYWORDS = frozenset({"AND", "OR", "NOT"})
_NAME_REST = re.compile(r"[\w.-]*\Z")  # \w in a str pattern: str.isalnum() or "_"


def is_category_name(name: str) -> bool:
    """A category name starts with a letter or ``_``, then letters, digits, ``_``, ``.`` or ``-``.

    The keywords AND, OR and NOT are never names: ``AND=x`` would be ambiguous to read.
    """
    if not name or name in KEYWORDS:
        return False
    first = name[0]
    return (first.isalpha() or first == "_") and _NAME_REST.match(name, 1) is not None


def _require_text(kind: str, value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise QueryError(f"a {kind} clause needs non-blank text, got {value!r}")


@dataclass(frozen=True)
class Semantic:
    """``"phrase"``: fragments whose meaning is close to the phrase."""

    phrase: str
    column: int | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _require_text("semantic", self.phrase)


@dataclass(frozen=True)
class Text:
    """``'text'`` (case-insensitive) or ``@'Text'`` (case-sensitive): fragments containing the phrase."""

    text: str
    case_sensitive: bool = False
    column: int | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _require_text("text", self.text)
        if not normalise_words(self.text, self.case_sensitive):
            raise QueryError(f"a text clause needs letters or digits to match, got {self.text!r}")


@dataclass(frozen=True)
class Category:
    """``NAME=V1,V2``: every fragment of the documents whose category ``NAME`` has any of the values."""

    name: str
    values: tuple[str, ...]
    column: int | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not is_category_name(self.name):
            raise QueryError(f"{self.name!r} is not a valid category name")
        if not isinstance(self.values, tuple) or not self.values:
            raise QueryError(f"category {self.name} needs a non-empty tuple of values, got {self.values!r}")
        for value in self.values:
            if not isinstance(value, str) or value == "":
                raise QueryError(f"category {self.name} has an empty or non-string value {value!r}")


def _require_operands(kind: str, operands: tuple, minimum: int) -> None:
    if not isinstance(operands, tuple) or len(operands) < minimum:
        raise QueryError(f"{kind} needs a tuple of at least {minimum} operands, got {operands!r}")
    for operand in operands:
        if not isinstance(operand, _OPERAND_TYPES):
            raise QueryError(f"{kind} cannot take {operand!r} as an operand")


@dataclass(frozen=True)
class And:
    """All operands hold; see ``algebra.combine_and`` for the scores."""

    operands: tuple[Node, ...]

    def __post_init__(self) -> None:
        _require_operands("AND", self.operands, 2)


@dataclass(frozen=True)
class Or:
    """Any operand holds; a fragment keeps its best score."""

    operands: tuple[Node, ...]

    def __post_init__(self) -> None:
        _require_operands("OR", self.operands, 2)


@dataclass(frozen=True)
class Not:
    """The documents in scope that the operand does not reach."""

    operand: Node

    def __post_init__(self) -> None:
        _require_operands("NOT", (self.operand,), 1)


@dataclass(frozen=True)
class TrueNode:
    """The empty query: every fragment in scope, as a pure filter."""


Clause = Semantic | Text | Category
Node = Semantic | Text | Category | And | Or | Not
Query = Node | TrueNode

_OPERAND_TYPES = (Semantic, Text, Category, And, Or, Not)
CLAUSE_TYPES = (Semantic, Text, Category)


def iter_clauses(node: Query, negated: bool = False):
    """Yield ``(clause, negated)`` for every clause in reading order;
    ``negated`` is true under an odd number of NOTs."""
    if isinstance(node, CLAUSE_TYPES):
        yield node, negated
    elif isinstance(node, (And, Or)):
        for operand in node.operands:
            yield from iter_clauses(operand, negated)
    elif isinstance(node, Not):
        yield from iter_clauses(node.operand, not negated)


def is_filter_only(node: Query) -> bool:
    """True when the subtree holds no semantic or text clause, so it only restricts documents.

    The evaluator runs such operands of an AND first and narrows the scope of the
    others with them: a category filter is then applied before each retriever's top-k.
    """
    if isinstance(node, Category):
        return True
    if isinstance(node, (Semantic, Text)):
        return False
    if isinstance(node, Not):
        return is_filter_only(node.operand)
    if isinstance(node, (And, Or)):
        return all(is_filter_only(operand) for operand in node.operands)
    return True  # TrueNode: no clause at all
