"""``filters/fields.py``: the fields a filter names that no document has, and each field's types and values."""

from __future__ import annotations

from dashrag.filters import MetadataColumns, parse_filter
from dashrag.filters.fields import field_summaries, unknown_field_warnings

METADATA = [{"year": 2024, "lang": "en", "tags": ["bm25", "dense"]},
            {"year": 2012, "lang": "es", "published": "2012-05-01", "reviewed": True},
            {"year": None, "lang": "en", "tags": []}]


def test_every_field_no_document_has_is_named_once_with_its_first_path():
    node = parse_filter({"$or": [{"yaer": 2024}, {"lang": "en"}, {"$not": {"yaer": {"$lt": 2000}}}],
                         "tgs": {"$exists": True}})
    assert unknown_field_warnings(node, MetadataColumns(METADATA)) == [
        "the filter's field 'yaer' ($.$or[0].yaer) is in no document, so it matches nothing; "
        "the fields are: lang, published, reviewed, tags, year",
        "the filter's field 'tgs' ($.tgs.$exists) is in no document, so it matches nothing; "
        "the fields are: lang, published, reviewed, tags, year"]


def test_a_filter_on_fields_the_corpus_has_warns_of_nothing():
    assert unknown_field_warnings(parse_filter({"year": {"$gte": 2000}, "lang": "en"}),
                                  MetadataColumns(METADATA)) == []


def test_a_corpus_without_metadata_says_so():
    (warning,) = unknown_field_warnings(parse_filter({"year": 2024}), MetadataColumns([{}, {}]))
    assert warning.endswith("; no document has any metadata")


def test_each_field_has_its_types_its_document_count_and_its_most_frequent_values():
    assert field_summaries(METADATA, examples=1) == [
        {"name": "lang", "types": ["string"], "documents": 3, "values": ["en"]},
        {"name": "published", "types": ["date"], "documents": 1, "values": ["2012-05-01"]},
        {"name": "reviewed", "types": ["bool"], "documents": 1, "values": [True]},
        {"name": "tags", "types": ["list", "string"], "documents": 1, "values": ["bm25"]},
        {"name": "year", "types": ["number"], "documents": 2, "values": [2024]}]


def test_true_and_one_are_different_values():
    assert field_summaries([{"x": True}, {"x": 1}, {"x": 1}])[0]["values"] == [1, True]
