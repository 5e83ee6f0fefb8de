"""Serialising: minimal parentheses, quoting where needed, and parse(serialise(t)) == t."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from dashrag.boolean import And, Category, Not, Or, Semantic, Text, TrueNode, parse, serialise
from dashrag.boolean.serialise import is_bare_value

from .strategies import trees

A, B, C = Category("CAT1", ("A",)), Category("CAT2", ("B",)), Category("CAT3", ("C",))


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (Or((And((A, B)), C)), "CAT1=A AND CAT2=B OR CAT3=C"),
        (And((Or((A, B)), C)), "(CAT1=A OR CAT2=B) AND CAT3=C"),
        (And((Not(A), B)), "NOT CAT1=A AND CAT2=B"),
        (Not(And((A, B))), "NOT (CAT1=A AND CAT2=B)"),
        (Not(Not(A)), "NOT NOT CAT1=A"),
        (And((And((A, B)), C)), "(CAT1=A AND CAT2=B) AND CAT3=C"),
        (Or((A, Or((B, C)))), "CAT1=A OR (CAT2=B OR CAT3=C)"),
    ],
)
def test_parentheses_only_where_the_tree_needs_them(tree, text):
    assert serialise(tree) == text


def test_true_is_the_empty_string():
    assert serialise(TrueNode()) == ""


def test_clause_forms():
    tree = And((Semantic('say "hi"'), Text("mop"), Text("Mop", case_sensitive=True)))
    assert serialise(tree) == """"say \\"hi\\"" AND 'mop' AND @'Mop'"""


def test_values_are_quoted_only_when_bare_would_not_read_back():
    assert (
        serialise(Category("CITY", ("Paris", "New York, NY", "AND", "a=b"))) == 'CITY=Paris,"New York, NY","AND","a=b"'
    )


@pytest.mark.parametrize("value", ["IQ", "en-US", "1.5", "a@b.org", "naïve"])
def test_plain_values_are_bare(value):
    assert is_bare_value(value)


@settings(max_examples=300, deadline=None)
@given(trees())
def test_parse_of_serialise_is_identity(tree):
    assert parse(serialise(tree)) == tree
