"""A recursive-descent parser for boolean queries (grammar in docs/boolean_queries.md).

Hand-written so that every error names the 1-based column and what was expected
there (``col 17: expected a value after '='``) and so that nothing but
``QuerySyntaxError`` ever escapes, whatever the input: nesting is bounded
(``MAX_DEPTH`` levels of parentheses and NOTs together) so a hostile query cannot
exhaust the Python stack.

Precedence, loosest first: OR, AND, NOT. Keywords are case-sensitive upper-case;
a lower-case ``and`` is an error that says so, never a silent category name.
"""

from __future__ import annotations

from collections.abc import Callable

from dashrag.boolean.ast import (
    KEYWORDS,
    And,
    Category,
    Node,
    Not,
    Or,
    Query,
    Semantic,
    Text,
    TrueNode,
    is_category_name,
)
from dashrag.boolean.lexer import ExpressionSyntaxError, Kind, Token, tokenize
from dashrag.boolean.normalise_text import normalise_words

MAX_DEPTH = 100
_CLAUSE_HINT = "a clause (\"phrase\", 'text', @'Text', NAME=VALUE, NOT or '(')"
_VALUE_KINDS = (Kind.BARE, Kind.PHRASE, Kind.TEXT)


def parse(query: str) -> Query:
    """Parse ``query`` into its syntax tree; an empty or blank query is ``TrueNode()``."""
    if not isinstance(query, str):
        raise ExpressionSyntaxError(str(query), 1, f"a query must be a string, got {type(query).__name__}")
    return _Parser(query).parse()


class _Parser:
    def __init__(self, query: str):
        self.query = query
        self.tokens = tokenize(query)
        self.index = 0

    # -- cursor -------------------------------------------------------------
    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def is_keyword(self, word: str) -> bool:
        return self.current.kind is Kind.BARE and self.current.value == word

    def error(self, message: str, token: Token | None = None) -> ExpressionSyntaxError:
        return ExpressionSyntaxError(self.query, (token or self.current).column, message)

    # -- grammar --------------------------------------------------------------
    def parse(self) -> Query:
        if self.current.kind is Kind.END:
            return TrueNode()
        node = self.parse_or(depth=0)
        if self.current.kind is not Kind.END:
            raise self.error(self.trailing_message())
        return node

    def trailing_message(self) -> str:
        token = self.current
        if token.kind is Kind.RPAREN:
            return "unexpected ')' with no matching '('"
        hint = ""
        if token.kind is Kind.BARE and token.value.upper() in KEYWORDS:
            hint = " (the keywords AND, OR and NOT are upper-case)"
        return f"expected AND, OR or the end of the query, found {token.describe()}{hint}"

    def parse_or(self, depth: int) -> Node:
        return self.parse_joined("OR", Or, self.parse_and, depth)

    def parse_and(self, depth: int) -> Node:
        return self.parse_joined("AND", And, self.parse_not, depth)

    def parse_joined(self, keyword: str, node: type[And] | type[Or], operand: Callable[[int], Node],
                     depth: int) -> Node:
        """``operand (keyword operand)*``: one operand alone, or the ``node`` of them all."""
        operands = [operand(depth)]
        while self.is_keyword(keyword):
            self.advance()
            operands.append(operand(depth))
        return operands[0] if len(operands) == 1 else node(tuple(operands))

    def parse_not(self, depth: int) -> Node:
        negations = 0
        while self.is_keyword("NOT"):
            self.advance()
            negations += 1
            self.check_depth(depth + negations)
        node = self.parse_primary(depth + negations)
        for _ in range(negations):
            node = Not(node)
        return node

    def check_depth(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.error(f"the query nests deeper than {MAX_DEPTH} levels of parentheses and NOTs")

    def parse_primary(self, depth: int) -> Node:
        token = self.current
        if token.kind is Kind.LPAREN:
            self.check_depth(depth + 1)
            self.advance()
            node = self.parse_or(depth + 1)
            if self.current.kind is not Kind.RPAREN:
                raise self.error(
                    f"expected ')' to close the '(' at col {token.column}, found {self.current.describe()}"
                )
            self.advance()
            return node
        if token.kind is Kind.PHRASE:
            self.advance()
            if not token.value.strip():
                raise self.error("the phrase is empty", token)
            return Semantic(token.value, column=token.column)
        if token.kind in (Kind.TEXT, Kind.CASED_TEXT):
            self.advance()
            cased = token.kind is Kind.CASED_TEXT
            if not normalise_words(token.value, cased):
                raise self.error("the text has no letters or digits to match", token)
            return Text(token.value, case_sensitive=cased, column=token.column)
        if token.kind is Kind.BARE and token.value not in KEYWORDS:
            return self.parse_category()
        raise self.error(f"expected {_CLAUSE_HINT}, found {token.describe()}", token)

    def parse_category(self) -> Category:
        name = self.advance()
        if self.current.kind is not Kind.EQUALS:
            if name.value.upper() in KEYWORDS:
                hint = " (the keywords AND, OR and NOT are upper-case)"
                raise self.error(f"expected {_CLAUSE_HINT}, found {name.describe()}{hint}", name)
            raise self.error(f"expected '=' after the category name {name.value!r}")
        if not is_category_name(name.value):
            raise self.error(
                f"{name.value!r} is not a category name (a letter or '_' first, then letters, digits, '_', '.' or '-')",
                name,
            )
        values = [self.parse_value(after=self.advance())]
        while self.current.kind is Kind.COMMA:
            values.append(self.parse_value(after=self.advance()))
        return Category(name.value, tuple(values), column=name.column)

    def parse_value(self, after: Token) -> str:
        token = self.current
        if token.kind not in _VALUE_KINDS:
            raise self.error(f"expected a value after '{after.value}', found {token.describe()}")
        if token.kind is Kind.BARE and token.value in KEYWORDS:  # as the reference: an operator is never a value
            raise self.error(f"expected a value after '{after.value}', found the operator {token.value} "
                             f"(quote it to mean the word: \"{token.value}\")")
        if token.value == "":
            raise self.error("a category value cannot be empty")
        self.advance()
        return token.value
