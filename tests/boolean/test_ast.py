"""The syntax tree refuses malformed nodes and answers the questions evaluation asks of it."""

from __future__ import annotations

import pytest

from dashrag.boolean import And, Category, Not, Or, Semantic, Text, TrueNode, iter_clauses
from dashrag.boolean.ast import is_category_name, is_filter_only
from dashrag.errors import QueryError


def test_blank_phrase_is_refused():
    with pytest.raises(QueryError):
        Semantic("   ")


def test_text_without_letters_or_digits_is_refused():
    with pytest.raises(QueryError):
        Text("?!", case_sensitive=False)


def test_category_needs_a_valid_name():
    with pytest.raises(QueryError):
        Category("1st", ("a",))


def test_keyword_is_not_a_category_name():
    assert not is_category_name("AND") and is_category_name("ANDROID")


def test_category_needs_values_as_a_non_empty_tuple():
    with pytest.raises(QueryError):
        Category("CAT1", ())


def test_category_refuses_an_empty_value():
    with pytest.raises(QueryError):
        Category("CAT1", ("A", ""))


def test_and_needs_two_operands():
    with pytest.raises(QueryError):
        And((Semantic("a"),))


def test_true_node_cannot_be_an_operand():
    with pytest.raises(QueryError):
        Or((Semantic("a"), TrueNode()))


def test_column_does_not_take_part_in_equality():
    assert Semantic("a", column=1) == Semantic("a", column=9)


def test_iter_clauses_marks_clauses_under_an_odd_number_of_nots():
    a, b, c = Semantic("a"), Semantic("b"), Semantic("c")
    tree = And((a, Not(b), Not(Not(c))))
    assert list(iter_clauses(tree)) == [(a, False), (b, True), (c, False)]


def test_filter_only_means_no_semantic_or_text_clause():
    cat = Category("CAT1", ("A",))
    assert is_filter_only(Not(Or((cat, cat)))) and not is_filter_only(And((cat, Not(Text("mop")))))
