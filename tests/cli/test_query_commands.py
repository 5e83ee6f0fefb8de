"""``dashrag.cli.query_commands`` driven alone: the answers equal the library's."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import dashrag
from dashrag.cli import query_commands


def test_query_alone_prints_the_library_answer_as_json(saved_folder):
    result = CliRunner().invoke(query_commands.app, [str(saved_folder), "rank fusion", "--json"])
    assert result.exit_code == 0, result.output
    chunks, _ = dashrag.load(saved_folder).retrieve("rank fusion")
    printed = json.loads(result.stdout)["results"]
    assert [(r["chunk_id"], r["text"]) for r in printed] == [(c.chunk.id, c.chunk.text) for c in chunks]


def test_query_alone_without_text_or_queries_is_one_error_line_exit_2(saved_folder):
    result = CliRunner().invoke(query_commands.app, [str(saved_folder)])
    assert result.exit_code == 2 and result.stderr == "error: give either a query text or --queries FILE\n"
