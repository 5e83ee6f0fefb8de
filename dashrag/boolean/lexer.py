"""Tokens of the boolean query language, each with the 1-based column where it starts.

Quoted literals (``"phrase"``, ``'text'``, ``@'Text'``) use a backslash only to
escape their own quote character and the backslash itself (``"say \\"hi\\""``,
``'C:\\\\temp'``); any other backslash is kept as written, so Windows paths and
regular-expression-looking text need no doubling. A quote that is directly followed
by a letter or digit does not close the literal: it is an apostrophe, so
``'don't mop'`` and ``'O'Brien'`` read as users mean them (a literal must therefore
be followed by a space, a parenthesis, a comma or the end). A *bare* token is a run of
characters up to whitespace or one of ``( ) , = " '``; the parser decides whether it
is a keyword, a category name or a category value.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import NamedTuple

from dashrag.errors import QuerySyntaxError


class ExpressionSyntaxError(QuerySyntaxError):
    """A syntax error in a boolean query; ``column`` is 1-based, ``query`` the text that failed."""

    def __init__(self, query: str, column: int, message: str):
        self.query = query
        self.column = column
        self.reason = message
        super().__init__(f"col {column}: {message}")


class Kind(Enum):
    PHRASE = "a \"phrase\""
    TEXT = "a 'text'"
    CASED_TEXT = "an @'Text'"
    BARE = "a word"
    LPAREN = "'('"
    RPAREN = "')'"
    COMMA = "','"
    EQUALS = "'='"
    END = "the end of the query"


class Token(NamedTuple):
    """One token; a named tuple because a query makes a handful per parse and they must be cheap."""

    kind: Kind
    value: str
    column: int

    def describe(self) -> str:
        """How an error message names this token (``found 'and'``)."""
        if self.kind is Kind.END:
            return "the end of the query"
        if self.kind is Kind.BARE:
            return repr(self.value)
        if self.kind in _LITERAL_NOUNS:
            return f"the {_LITERAL_NOUNS[self.kind]} {self.value!r}"
        return self.kind.value


_LITERAL_NOUNS = {Kind.PHRASE: "phrase", Kind.TEXT: "text", Kind.CASED_TEXT: "case-sensitive text"}
_PUNCTUATION = {"(": Kind.LPAREN, ")": Kind.RPAREN, ",": Kind.COMMA, "=": Kind.EQUALS}


_QUOTED_STOPS = {'"': re.compile(r'[\\"]'), "'": re.compile(r"[\\']")}  # a backslash or the closing quote
_SPACES = re.compile(r"\s+")  # \s in a str pattern is exactly str.isspace()
_BARE_RUN = re.compile(r"[^\s(),=\"']+")


def _read_quoted(query: str, start: int, quote: str) -> tuple[str, int]:
    """Read a literal whose opening quote is at ``start``; return its text and the index after it.

    Jumps from one backslash or quote to the next (a regular expression finds them),
    so a long phrase costs a few steps, not one per character.
    """
    out: list[str] = []
    stops = _QUOTED_STOPS[quote]
    n = len(query)
    i = start + 1
    while True:
        found = stops.search(query, i)
        if found is None:
            raise ExpressionSyntaxError(
                query, n + 1, f"missing closing {quote} for the literal opened at col {start + 1}"
            )
        j = found.start()
        out.append(query[i:j])
        if query[j] == "\\":
            if j + 1 < n and query[j + 1] in (quote, "\\"):
                out.append(query[j + 1])
                i = j + 2
            else:  # any other backslash is kept as written
                out.append("\\")
                i = j + 1
        elif j + 1 < n and query[j + 1].isalnum():  # an apostrophe: don't, O'Brien
            out.append(quote)
            i = j + 1
        else:
            return "".join(out), j + 1


def _run_end(pattern: re.Pattern[str], query: str, start: int) -> int:
    """End of the run of ``pattern`` at ``start``; the caller has seen its first character match."""
    found = pattern.match(query, start)
    if found is None:
        raise AssertionError(f"no {pattern.pattern} run at {start}")
    return found.end()


def tokenize(query: str) -> list[Token]:
    """Split ``query`` into tokens ending with one END token; unterminated literals are errors."""
    tokens: list[Token] = []
    i = 0
    n = len(query)
    while i < n:
        ch = query[i]
        if ch.isspace():
            i = _run_end(_SPACES, query, i)
        elif ch in _PUNCTUATION:
            tokens.append(Token(_PUNCTUATION[ch], ch, i + 1))
            i += 1
        elif ch == '"':
            text, end = _read_quoted(query, i, '"')
            tokens.append(Token(Kind.PHRASE, text, i + 1))
            i = end
        elif ch == "'":
            text, end = _read_quoted(query, i, "'")
            tokens.append(Token(Kind.TEXT, text, i + 1))
            i = end
        elif ch == "@" and query.startswith("@'", i):
            text, end = _read_quoted(query, i + 1, "'")
            tokens.append(Token(Kind.CASED_TEXT, text, i + 1))
            i = end
        else:
            end = _run_end(_BARE_RUN, query, i)
            tokens.append(Token(Kind.BARE, query[i:end], i + 1))
            i = end
    tokens.append(Token(Kind.END, "", n + 1))
    return tokens


def escape_literal(text: str, quote: str) -> str:
    """The inverse of ``_read_quoted``: quote ``text`` so it reads back exactly."""
    escaped = text.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return f"{quote}{escaped}{quote}"
