"""Checking a query's category names against the corpus, before anything runs.

A misspelt name (``CONTRY=IQ``) would otherwise match no document and silently turn
an AND into an empty result; so an unknown name is an error that points at the
clause, lists the names the corpus has, and suggests the closest one.
"""

from __future__ import annotations

import difflib
from typing import Iterable, Mapping

from dashrag.boolean.ast import Category, Query, iter_clauses
from dashrag.errors import QuerySyntaxError


class UnknownCategoryError(QuerySyntaxError):
    """A category clause names a category no document has; ``known`` lists the ones that exist."""

    def __init__(self, name: str, column: int | None, known: Iterable[str]):
        self.name = name
        self.column = column
        self.known = tuple(sorted(known))
        where = f"col {column}: " if column is not None else ""
        close = difflib.get_close_matches(name, self.known, n=1)
        suggestion = f" (did you mean {close[0]}?)" if close else ""
        listed = ", ".join(self.known) if self.known else "none (the corpus has no categories)"
        super().__init__(f"{where}unknown category {name!r}{suggestion}; known categories: {listed}")


def category_names(metadata: Iterable[Mapping[str, object]]) -> frozenset[str]:
    """Every category name used by at least one document (pass each document's categories)."""
    return frozenset(name for categories in metadata for name in categories)


def validate_categories(node: Query, known: Iterable[str]) -> None:
    """Raise ``UnknownCategoryError`` for the first category clause whose name is not in ``known``."""
    known_set = frozenset(known)
    for clause, _ in iter_clauses(node):
        if isinstance(clause, Category) and clause.name not in known_set:
            raise UnknownCategoryError(clause.name, clause.column, known_set)
