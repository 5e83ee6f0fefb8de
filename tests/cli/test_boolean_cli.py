"""`dashrag index boolean` and `dashrag query DIR '<expression>'` end to end on the categorised test corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dashrag.cli.main import app

pytestmark = pytest.mark.slow  # the boolean preset embeds the corpus with the real MiniLM model

CORPUS = Path(__file__).resolve().parents[1] / "data" / "boolean_corpus"
runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("boolean-cli") / "idx"
    result = run("index", "boolean", "--corpus", CORPUS, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_query_evaluates_the_expression(indexed):
    result = run("query", indexed, '"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ', "--json")
    assert {r["document_id"] for r in json.loads(result.output)["results"]} == {
        "asylum_iraq_family.txt", "asylum_iraq_detention.txt", "reception_centre_cleaning.txt"}


def test_the_json_trace_holds_the_syntax_tree(indexed):
    result = run("query", indexed, """("kitchen floor" OR "cleanup") AND 'mop'""", "--json", "--trace")
    tree = json.loads(result.output)["trace"]["selection"]["tree"]
    assert [c["node"] for c in tree["children"]] == ['"kitchen floor" OR "cleanup"', "'mop'"]


def test_the_text_trace_renders_the_syntax_tree(indexed):
    result = run("query", indexed, "'mop' AND CAT1=C", "--trace")
    words = " ".join(result.output.split())  # rich wraps long lines
    # a text clause's scores are max-normalised (0..1, docs/boolean_queries.md), so its best is 1
    assert "'mop' AND CAT1=C 2 fragments/2 docs best 1 " in words and "CAT1=C filter 4 docs" in words


def test_a_syntax_error_is_one_line_and_exit_2(indexed):
    result = run("query", indexed, '"asylum" AND CAT1=')
    assert (result.exit_code, result.output.strip().splitlines()) == (
        2, ["error: col 19: expected a value after '=', found the end of the query"])


def test_an_unknown_category_lists_the_known_ones_and_exits_2(indexed):
    result = run("query", indexed, "CONTRY_OF_ORIGIN=IQ")
    assert (result.exit_code, "known categories: CAT1, CAT2, CAT3, COUNTRY_OF_ORIGIN" in result.output) == (2, True)
