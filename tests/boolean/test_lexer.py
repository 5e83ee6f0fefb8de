"""Tokens carry 1-based columns; quoted literals escape only their quote and the backslash."""

from __future__ import annotations

import pytest

from dashrag.boolean.lexer import ExpressionSyntaxError, Kind, escape_literal, tokenize


def test_tokens_and_columns():
    tokens = tokenize("""NOT ("a b" OR @'X') AND C=v,'w'""")
    assert [(t.kind, t.value, t.column) for t in tokens] == [
        (Kind.BARE, "NOT", 1), (Kind.LPAREN, "(", 5), (Kind.PHRASE, "a b", 6), (Kind.BARE, "OR", 12),
        (Kind.CASED_TEXT, "X", 15), (Kind.RPAREN, ")", 19), (Kind.BARE, "AND", 21), (Kind.BARE, "C", 25),
        (Kind.EQUALS, "=", 26), (Kind.BARE, "v", 27), (Kind.COMMA, ",", 28), (Kind.TEXT, "w", 29),
        (Kind.END, "", 32),
    ]


def test_backslash_escapes_the_quote_and_itself():
    assert tokenize(r'"say \"hi\" \\ ok"')[0].value == 'say "hi" \\ ok'


def test_other_backslashes_stay_as_written():
    assert tokenize(r"'C:\temp\new'")[0].value == r"C:\temp\new"


def test_unterminated_literal_names_where_it_opened():
    with pytest.raises(ExpressionSyntaxError, match=r"^col 9: missing closing ' for the literal opened at col 5$"):
        tokenize("a=b 'mop")


def test_at_sign_without_quote_is_part_of_a_bare_word():
    assert [t.value for t in tokenize("MAIL=a@b.org")[:3]] == ["MAIL", "=", "a@b.org"]


@pytest.mark.parametrize("text", ['plain', 'with "double"', "with 'single'", "back\\slash\\", '\\"'])
def test_escape_literal_reads_back(text):
    for quote, kind in (('"', Kind.PHRASE), ("'", Kind.TEXT)):
        token = tokenize(escape_literal(text, quote))[0]
        assert (token.kind, token.value) == (kind, text)


def test_quote_followed_by_a_letter_is_an_apostrophe():
    assert [t.value for t in tokenize("'don't mop' OR 'O'Brien'")[:3]] == ["don't mop", "OR", "O'Brien"]


def test_quote_before_a_parenthesis_closes_the_literal():
    assert [t.kind for t in tokenize("('it's')")] == [Kind.LPAREN, Kind.TEXT, Kind.RPAREN, Kind.END]
