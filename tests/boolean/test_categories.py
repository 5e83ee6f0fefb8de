"""Unknown category names are errors that point at the clause and list the known names."""

from __future__ import annotations

import pytest

from dashrag.boolean import UnknownCategoryError, category_names, parse, validate_categories
from dashrag.errors import QuerySyntaxError

KNOWN = {"COUNTRY_OF_ORIGIN", "CAT1", "CAT2", "CAT3"}


def test_known_names_pass():
    validate_categories(parse('"x" AND (CAT1=A OR NOT COUNTRY_OF_ORIGIN=IQ)'), KNOWN)


def test_unknown_name_lists_known_and_suggests_the_closest():
    with pytest.raises(UnknownCategoryError) as caught:
        validate_categories(parse('"asylum" AND NOT CONTRY_OF_ORIGIN=IQ'), KNOWN)
    assert str(caught.value) == (
        "col 18: unknown category 'CONTRY_OF_ORIGIN' (did you mean COUNTRY_OF_ORIGIN?); "
        "known categories: CAT1, CAT2, CAT3, COUNTRY_OF_ORIGIN"
    )


def test_unknown_category_is_a_query_syntax_error():
    with pytest.raises(QuerySyntaxError):
        validate_categories(parse("LANG=en"), KNOWN)


def test_corpus_without_categories_says_so():
    with pytest.raises(UnknownCategoryError, match="known categories: none"):
        validate_categories(parse("LANG=en"), set())


def test_category_names_collects_every_documents_names():
    assert category_names([{"CAT1": ("A",)}, {}, {"CAT2": ("B",), "CAT1": ("C",)}]) == {"CAT1", "CAT2"}
