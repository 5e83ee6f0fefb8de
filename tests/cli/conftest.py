"""The CLI as a user meets it: real commands, their exit code, stdout and stderr kept apart."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dashrag.cli.main import app
from tests.conftest import EXAMPLE_CORPUS


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def answers_of(folder, queries, digits: int) -> list:
    """``dashrag query --json``'s (document id, score rounded to ``digits``) top 10 for each query: what a kill -9
    test compares between the old tree, the new one and a killed update's folder."""
    out = []
    for q in queries:
        result = invoke("query", folder, q, "--json", "--top-k", "10")
        assert result.exit_code == 0, result.output
        out.append([(r["document_id"], round(r["score"], digits)) for r in json.loads(result.output)["results"]])
    return out


def error_line(result) -> str:
    """The one ``error:`` line of a refused command (exit 2, nothing else on stderr)."""
    lines = result.stderr.splitlines()
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture(scope="module")
def saved_folder(tmp_path_factory):
    """A TF-IDF tree indexed from the shipped corpus by ``dashrag index``."""
    out = tmp_path_factory.mktemp("cli_saved") / "idx"
    result = invoke("index", '{"component": "TFIDFRetriever"}', "--corpus", EXAMPLE_CORPUS, "--out", out)
    assert result.exit_code == 0, result.output
    return out
