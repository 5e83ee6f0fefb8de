"""Hypothesis strategies for boolean-query syntax trees and query strings."""

from __future__ import annotations

from hypothesis import strategies as st

from dashrag.boolean import And, Category, Not, Or, Semantic, Text, normalise_words
from dashrag.boolean.ast import is_category_name

phrases = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() != "")
category_names = st.text(
    alphabet=st.sampled_from("ABCXYZabcé_Ω0189.-"), min_size=1, max_size=8
).filter(is_category_name)
category_values = st.text(min_size=1, max_size=8)


@st.composite
def text_clauses(draw):
    case_sensitive = draw(st.booleans())
    text = draw(phrases.filter(lambda s: normalise_words(s, case_sensitive) != ()))
    return Text(text, case_sensitive)


clauses = st.one_of(
    phrases.map(Semantic),
    text_clauses(),
    st.builds(Category, category_names, st.lists(category_values, min_size=1, max_size=3).map(tuple)),
)


def trees(leaves=clauses, max_leaves: int = 12):
    """Random trees of AND / OR (2-3 operands) and NOT over ``leaves``."""
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            children.map(Not),
            st.lists(children, min_size=2, max_size=3).map(lambda ops: And(tuple(ops))),
            st.lists(children, min_size=2, max_size=3).map(lambda ops: Or(tuple(ops))),
        ),
        max_leaves=max_leaves,
    )


QUERY_PIECES = [
    "AND", "OR", "NOT", "and", "or", "not", "(", ")", "=", ",", '"', "'", "@", "@'", "\\",
    '"asylum seeker"', "'mop'", "@'Mop'", '""', "''", "'...'", "CAT1=A", "CAT2=B,C", 'CAT3="x y",z',
    "COUNTRY_OF_ORIGIN=IQ", "NAME", "1bad=x", "A=", "=B", '"unterminated', "'open", " ", "\t", "\n",
]
query_strings = st.lists(st.sampled_from(QUERY_PIECES), max_size=12).flatmap(
    lambda pieces: st.sampled_from([" ".join(pieces), "".join(pieces)])
)


def category_documents(node, categories: dict[str, dict], universe: set[str]) -> set[str]:
    """The oracle: the documents a category expression selects, by plain set algebra over
    ``categories`` (document → its categories); ``universe`` is every document."""
    if isinstance(node, Category):
        return {d for d, cats in categories.items() if set(node.values) & set(cats.get(node.name, ()))}
    if isinstance(node, And):
        return set.intersection(*(category_documents(o, categories, universe) for o in node.operands))
    if isinstance(node, Or):
        return set.union(*(category_documents(o, categories, universe) for o in node.operands))
    if isinstance(node, Not):
        return universe - category_documents(node.operand, categories, universe)
    raise TypeError(node)
