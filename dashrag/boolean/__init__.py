"""Boolean queries over fragments: ``"phrase"``, ``'text'``, ``@'Text'``, ``NAME=V1,V2``, AND/OR/NOT.

The pure parts a retriever component builds on: the language (``parse``,
``serialise``, the syntax tree), the fragment algebra and its ``evaluate`` walk
(clauses are answered by a callback, so any retriever can plug in), text
normalisation for the text clause, and the selection rules. The full reference,
with the grammar and the formulas, is docs/boolean_queries.md.
"""

from dashrag.boolean.algebra import FragmentSet, Scope, combine_and, combine_or, complement, geometric_combination
from dashrag.boolean.ast import And, Category, Clause, Node, Not, Or, Query, Semantic, Text, TrueNode, iter_clauses
from dashrag.boolean.categories import UnknownCategoryError, category_names, validate_categories
from dashrag.boolean.evaluate import BranchReranker, LeafEvaluator, evaluate
from dashrag.boolean.lexer import ExpressionSyntaxError
from dashrag.boolean.normalise_text import PhraseMatcher, contains_phrase, normalise_text, normalise_words
from dashrag.boolean.parser import parse
from dashrag.boolean.rerank import rerank_in_rounds, rerank_query, semantic_clauses
from dashrag.boolean.selection import (
    DocumentHit,
    SelectionThresholds,
    aggregate_documents,
    fast_path_select,
    fill_up,
    select_documents,
    three_tier_select,
)
from dashrag.boolean.serialise import serialise

__all__ = [
    "And", "BranchReranker", "Category", "Clause", "DocumentHit", "ExpressionSyntaxError", "FragmentSet",
    "LeafEvaluator", "Node", "Not", "Or", "PhraseMatcher", "Query", "Scope", "SelectionThresholds", "Semantic",
    "Text", "TrueNode", "UnknownCategoryError", "aggregate_documents", "category_names", "combine_and",
    "combine_or", "complement", "contains_phrase", "evaluate", "fast_path_select", "fill_up",
    "geometric_combination", "iter_clauses", "normalise_text", "normalise_words", "parse", "rerank_in_rounds",
    "rerank_query", "select_documents", "semantic_clauses", "serialise", "three_tier_select",
    "validate_categories",
]
