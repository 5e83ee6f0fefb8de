"""The document mask of each operator over real metadata columns: lists, missing fields, dates, type errors."""

import numpy as np
import pytest

from dashrag.errors import FilterError
from dashrag.filters import MetadataColumns, document_mask, parse_filter

DOCUMENTS: list[dict] = [
    {"year": 2016, "lang": "es", "tags": ["chem", "bio"], "published": "2016-03-01", "open": True},
    {"year": 2014, "lang": "es", "retracted": True, "published": "2014-12-31T23:30:00-01:00"},
    {"year": 2020.5, "lang": "de", "retracted": None, "tags": [], "open": False},
    {"lang": "en", "tags": ["bio"], "published": "2015-01-01"},
    {"year": [1999, 2021], "lang": ["en", "fr"], "note": {"nested": 1}},
]
COLUMNS = MetadataColumns(DOCUMENTS)


def matching(raw):
    return np.flatnonzero(document_mask(parse_filter(raw), COLUMNS)).tolist()


@pytest.mark.parametrize("raw, expected", [
    ({"lang": "es"}, [0, 1]),
    ({"lang": {"$eq": "en"}}, [3, 4]),
    ({"lang": {"$ne": "es"}}, [2, 3, 4]),
    ({"year": {"$gt": 2016}}, [2, 4]),
    ({"year": {"$gte": 2016}}, [0, 2, 4]),
    ({"year": {"$lt": 2016}}, [1, 4]),
    ({"year": {"$lte": 2016}}, [0, 1, 4]),
    ({"year": 2020.5}, [2]),
    ({"lang": {"$in": ["de", "fr"]}}, [2, 4]),
    ({"lang": {"$nin": ["de", "fr"]}}, [0, 1, 3]),
    ({"lang": {"$in": []}}, []),
    ({"open": True}, [0]),
    ({"open": {"$ne": True}}, [1, 2, 3, 4]),
    ({"lang": {"$gt": "en"}}, [0, 1, 4]),
])
def test_each_operator(raw, expected):
    assert matching(raw) == expected


def test_a_list_field_matches_when_any_element_matches():
    assert matching({"tags": "bio"}) == [0, 3]
    assert matching({"year": {"$gt": 2020, "$lt": 2000}}) == [4]  # one element each: still "any element"


def test_ne_and_nin_match_documents_without_the_field():
    assert matching({"tags": {"$ne": "bio"}}) == [1, 2, 4]
    assert matching({"retracted": {"$nin": [True]}}) == [0, 2, 3, 4]


def test_exists_ignores_null_and_empty_lists():
    assert matching({"retracted": {"$exists": True}}) == [1]
    assert matching({"tags": {"$exists": True}}) == [0, 3]
    assert matching({"tags": {"$exists": False}}) == [1, 2, 4]
    assert matching({"note": {"$exists": True}}) == [4]


def test_a_field_no_document_has_matches_nothing():
    assert matching({"colour": "red"}) == []
    assert matching({"colour": {"$ne": "red"}}) == [0, 1, 2, 3, 4]


def test_iso_dates_compare_as_instants():
    # 2014-12-31T23:30:00-01:00 is 2015-01-01T00:30Z: after 2015-01-01 (midnight UTC), as text it would be before
    assert matching({"published": {"$gt": "2015-01-01"}}) == [0, 1]
    assert matching({"published": "2015-01-01T00:00:00+00:00"}) == [3]
    assert matching({"published": {"$lt": "2015-01-01T01:00:00+01:00"}}) == []  # the same instant
    assert matching({"published": {"$lte": "2015-01-01T01:00:00+01:00"}}) == [3]


def test_logical_operators():
    assert matching({"$or": [{"lang": "de"}, {"tags": "chem"}]}) == [0, 2]
    assert matching({"$and": [{"lang": "es"}, {"year": {"$gt": 2015}}]}) == [0]
    assert matching({"$not": {"lang": "es"}}) == [2, 3, 4]
    assert matching({"year": {"$not": {"$gte": 2016}}}) == [1, 3]  # 4 holds 2021: "some year >= 2016" holds
    assert matching({}) == [0, 1, 2, 3, 4]


def test_the_issue_example():
    raw = {"year": {"$gte": 2015}, "lang": {"$in": ["es", "de"]},
           "$or": [{"tags": {"$in": ["chem"]}}, {"retracted": {"$exists": True}}]}
    assert matching(raw) == [0]


@pytest.mark.parametrize("raw, path, message", [
    ({"year": "2015"}, "$.year", "compares a string ('2015') with 'year', which holds a number"),
    ({"year": {"$gte": "2015-01-01"}}, "$.year.$gte", "compares a date"),
    ({"lang": {"$lt": 3}}, "$.lang.$lt", "which holds a string"),
    ({"$or": [{"lang": "es"}, {"published": "last year"}]}, "$.$or[1].published", "which holds a date"),
    ({"open": {"$in": ["yes"]}}, "$.open.$in", "which holds a boolean"),
])
def test_comparing_values_of_different_types_is_an_error(raw, path, message):
    with pytest.raises(FilterError) as caught:
        matching(raw)
    assert caught.value.path == path and message in caught.value.reason
