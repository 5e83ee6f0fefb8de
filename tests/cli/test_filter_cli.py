"""``dashrag query --filter`` and ``dashrag eval --filter`` as a user meets them: metadata in the JSON output,
only matching documents, and exit 2 with the filter's path for a bad filter."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import error_line, invoke

LINES = [
    {"_id": "a", "text": "Dense retrieval embeds queries and passages.", "metadata": {"year": 2019, "lang": "en"}},
    {"_id": "b", "text": "Sparse retrieval ranks passages with BM25.", "metadata": {"year": 2012, "lang": "en"}},
    {"_id": "c", "text": "La recuperación densa usa embeddings de passages.", "metadata": {"year": 2021, "lang": "es"}},
]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("filter_cli")
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    out = folder / "idx"
    result = invoke("index", '{"component": "BM25Retriever"}', "--corpus", corpus, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_query_filter_keeps_only_matching_documents_with_their_metadata(indexed):
    result = invoke("query", indexed, "retrieval passages", "--json", "--filter", '{"year": {"$gte": 2015}}')
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    assert sorted(r["document_id"] for r in results) == ["a", "c"]
    assert [r["metadata"] for r in results if r["document_id"] == "a"] == [{"year": 2019, "lang": "en"}]
    unfiltered = json.loads(invoke("query", indexed, "retrieval passages", "--json").stdout)["results"]
    assert {r["document_id"] for r in unfiltered} >= {"a", "b"}


@pytest.mark.parametrize("bad, where", [('{"year": {"$gtee": 2015}}', "filter $.year.$gtee"),
                                        ('{"year": "2015"}', "filter $.year: compares a string"),
                                        ('{"year": ', "filter $: not valid JSON")])
def test_a_bad_filter_exits_2_naming_the_path(indexed, bad, where):
    assert where in error_line(invoke("query", indexed, "retrieval", "--filter", bad))


@pytest.mark.parametrize("bad, where", [
    ('{"year": ' + "9" * 400 + "}", "filter $.year: the number"),
    ('{"year": 2019, "year": 2012}', "the key 'year' appears twice"),
    ('{"lang": "\\u0000"}', "NUL"),
    ('{"lang": "\\ud800"}', "lone surrogate"),
    ('{"year": {"$in": [' + ",".join(["1"] * 10_001) + "]}}", "more than 10,000 values"),
])
def test_a_filter_out_of_range_ambiguous_or_too_large_is_one_error_line(indexed, bad, where):
    """Issue 38: a 400-digit number was a traceback, a key given twice silently kept its last value."""
    assert where in error_line(invoke("query", indexed, "retrieval", "--filter", bad))


def test_a_filter_field_no_document_has_is_a_warning_listing_the_fields_and_a_json_warnings_entry(indexed):
    result = invoke("query", indexed, "retrieval passages", "--json", "--filter", '{"yaer": 2024}')
    assert result.exit_code == 0, result.output
    said = ("the filter's field 'yaer' ($.yaer) is in no document, so it matches nothing; "
            "the fields are: lang, year")
    assert result.stderr.splitlines() == [f"warning: {said}"]
    answer = json.loads(result.stdout)
    assert answer["results"] == [] and answer["warnings"] == [said]


def test_a_filter_on_known_fields_warns_of_nothing(indexed):
    result = invoke("query", indexed, "retrieval passages", "--json", "--filter", '{"year": {"$gte": 2015}}')
    assert result.stderr == "" and json.loads(result.stdout)["warnings"] == []
