"""The category clause's index: documents per value, with their mask and chunk count."""

from __future__ import annotations

import numpy as np
import pytest

from dashrag.boolean.algebra import IndexedDocuments
from dashrag.boolean.category_index import CategoryIndex

IDS = ["d0", "d1", "d2", "d3"]
CATEGORIES: list[dict[str, tuple[str, ...]]] = [
    {"COUNTRY": ("IQ",), "CAT": ("A", "B")},
    {"COUNTRY": ("SY", "IQ")},
    {"CAT": ("B",)},
    {},
]
SIZES = [2, 1, 3, 4]


@pytest.fixture(scope="module")
def index() -> CategoryIndex:
    return CategoryIndex(IDS, CATEGORIES, SIZES)


def test_one_value_gives_the_documents_that_carry_it(index):
    assert index.documents("COUNTRY", ["IQ"]) == {"d0", "d1"}


def test_several_values_give_the_union(index):
    assert index.documents("CAT", ["A", "B"]) == {"d0", "d2"}


def test_an_unknown_value_or_name_gives_no_document(index):
    assert (index.documents("COUNTRY", ["AF"]), index.documents("YEAR", ["2020"])) == (frozenset(), frozenset())


def test_an_answer_carries_its_mask_over_the_document_order(index):
    answer = index.documents("CAT", ["A", "B"])
    assert (isinstance(answer, IndexedDocuments), answer.mask.tolist()) == (True, [True, False, True, False])


def test_an_answer_carries_its_chunk_count(index):
    assert (index.documents("COUNTRY", ["IQ"]).chunk_count, index.documents("CAT", ["A", "B"]).chunk_count) == (3, 5)


def test_names_are_every_category_some_document_carries(index):
    assert index.names == {"COUNTRY", "CAT"}


def test_without_sizes_the_count_is_the_number_of_documents():
    assert CategoryIndex(IDS, CATEGORIES).documents("COUNTRY", ["IQ", "SY"]).chunk_count == 2


def test_answers_record_their_universe():
    universe = {"d0": (), "d1": ()}
    assert CategoryIndex(IDS, CATEGORIES, universe=universe).documents("COUNTRY", ["SY"]).universe is universe


def test_the_mask_of_a_union_is_the_union_of_masks(index):
    union = index.documents("COUNTRY", ["IQ", "SY"]).mask
    assert np.array_equal(union, index.documents("COUNTRY", ["IQ"]).mask | index.documents("COUNTRY", ["SY"]).mask)
