"""The grammar: the issue's examples, precedence, keywords, errors with columns, and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.boolean import And, Category, Not, Or, Semantic, Text, TrueNode, parse, serialise
from dashrag.boolean.parser import MAX_DEPTH
from dashrag.errors import QuerySyntaxError

from .strategies import query_strings

IQ = Category("COUNTRY_OF_ORIGIN", ("IQ",))
A, B, C = Category("CAT1", ("A",)), Category("CAT2", ("B",)), Category("CAT3", ("C",))


@pytest.mark.parametrize(
    ("query", "tree"),
    [
        ('"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ', And((Semantic("asylum seeker"), IQ))),
        (
            '"asylum seeker" AND NOT COUNTRY_OF_ORIGIN=SY',
            And((Semantic("asylum seeker"), Not(Category("COUNTRY_OF_ORIGIN", ("SY",))))),
        ),
        (
            """("kitchen floor" OR "cleanup") AND 'mop'""",
            And((Or((Semantic("kitchen floor"), Semantic("cleanup"))), Text("mop"))),
        ),
        ("(CAT1=A AND CAT2=B) OR CAT3=C", Or((And((A, B)), C))),
    ],
)
def test_issue_examples_parse(query, tree):
    assert parse(query) == tree


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_empty_query_is_true(query):
    assert parse(query) == TrueNode()


def test_case_sensitive_text_clause():
    assert parse("@'Microfibre'") == Text("Microfibre", case_sensitive=True)


def test_category_with_several_values():
    assert parse("CAT2=B,C") == Category("CAT2", ("B", "C"))


def test_quoted_values_may_hold_spaces_and_commas():
    assert parse(r"""CITY="New York, NY",'it\'s'""") == Category("CITY", ("New York, NY", "it's"))


def test_spaces_around_equals_and_commas_are_allowed():
    assert parse("CAT2 = B , C") == Category("CAT2", ("B", "C"))


def test_and_binds_tighter_than_or():
    assert parse("CAT1=A OR CAT2=B AND CAT3=C") == Or((A, And((B, C))))


def test_not_binds_tighter_than_and():
    assert parse("NOT CAT1=A AND CAT2=B") == And((Not(A), B))


def test_chains_of_one_operator_are_one_node():
    assert parse("CAT1=A AND CAT2=B AND CAT3=C") == And((A, B, C))


def test_parentheses_keep_a_nested_node():
    assert parse("(CAT1=A AND CAT2=B) AND CAT3=C") == And((And((A, B)), C))


def test_not_not():
    assert parse("NOT NOT CAT1=A") == Not(Not(A))


def test_clause_columns_are_recorded():
    tree = parse('"x" AND  CAT1=A')
    assert [tree.operands[0].column, tree.operands[1].column] == [1, 10]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ('"asylum seeker" AND CAT1=', "col 26: expected a value after '=', found the end of the query"),
        ("CAT2=B,", "col 8: expected a value after ',', found the end of the query"),
        (
            '"a" and "b"',
            "col 5: expected AND, OR or the end of the query, found 'and' "
            "(the keywords AND, OR and NOT are upper-case)",
        ),
        ('"a" "b"', "col 5: expected AND, OR or the end of the query, found the phrase 'b'"),
        ("mop", "col 4: expected '=' after the category name 'mop'"),
        (
            'not "a"',
            "col 1: expected a clause (\"phrase\", 'text', @'Text', NAME=VALUE, NOT or '('), found 'not' "
            "(the keywords AND, OR and NOT are upper-case)",
        ),
        ("(CAT1=A", "col 8: expected ')' to close the '(' at col 1, found the end of the query"),
        ("CAT1=A)", "col 7: unexpected ')' with no matching '('"),
        ("OR CAT1=A", "col 1: expected a clause (\"phrase\", 'text', @'Text', NAME=VALUE, NOT or '('), found 'OR'"),
        (
            "CAT1=A AND",
            "col 11: expected a clause (\"phrase\", 'text', @'Text', NAME=VALUE, NOT or '('), "
            "found the end of the query",
        ),
        ("()", "col 2: expected a clause (\"phrase\", 'text', @'Text', NAME=VALUE, NOT or '('), found ')'"),
        ("2x=y", "col 1: '2x' is not a category name (a letter or '_' first, then letters, digits, '_', '.' or '-')"),
        ('CAT1=""', "col 6: a category value cannot be empty"),
        ('"  "', "col 1: the phrase is empty"),
        ("a=b AND '--'", "col 9: the text has no letters or digits to match"),
        ("CAT1=@'x'", "col 6: expected a value after '=', found the case-sensitive text 'x'"),
        ('"open', 'col 6: missing closing " for the literal opened at col 1'),
    ],
)
def test_syntax_errors_name_the_column_and_what_was_expected(query, message):
    with pytest.raises(QuerySyntaxError) as caught:
        parse(query)
    assert str(caught.value) == message


def test_error_carries_the_column_as_an_attribute():
    with pytest.raises(QuerySyntaxError) as caught:
        parse("CAT1=A AND CAT2=")
    assert caught.value.column == 17


def test_nesting_is_bounded_with_a_syntax_error():
    with pytest.raises(QuerySyntaxError, match="nests deeper than"):
        parse("(" * (MAX_DEPTH + 1) + "CAT1=A" + ")" * (MAX_DEPTH + 1))


def test_nesting_up_to_the_bound_parses():
    tree = parse("NOT " * MAX_DEPTH + "CAT1=A")
    for _ in range(MAX_DEPTH):
        tree = tree.operand
    assert tree == A


def _parse_or_syntax_error(query: str) -> None:
    try:
        tree = parse(query)
    except QuerySyntaxError:
        return
    assert parse(serialise(tree)) == tree


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=40))
def test_fuzz_random_text_raises_only_syntax_errors(query):
    _parse_or_syntax_error(query)


@settings(max_examples=400, deadline=None)
@given(query_strings)
def test_fuzz_grammar_tokens_raise_only_syntax_errors(query):
    _parse_or_syntax_error(query)
