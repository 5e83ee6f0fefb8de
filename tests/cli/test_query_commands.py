"""``dashrag.cli.query_commands`` driven alone: the answers equal the library's."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

import dashrag
from dashrag.cli import index_commands, query_commands
from tests.conftest import EXAMPLE_CORPUS, REPO


def test_query_alone_prints_the_library_answer_as_json(saved_folder):
    result = CliRunner().invoke(query_commands.app, [str(saved_folder), "rank fusion", "--json"])
    assert result.exit_code == 0, result.output
    chunks, _ = dashrag.load(saved_folder).retrieve("rank fusion")
    printed = json.loads(result.stdout)["results"]
    assert [(r["chunk_id"], r["text"]) for r in printed] == [(c.chunk.id, c.chunk.text) for c in chunks]


def test_query_alone_without_text_or_queries_is_one_error_line_exit_2(saved_folder):
    result = CliRunner().invoke(query_commands.app, [str(saved_folder)])
    assert result.exit_code == 2 and result.stderr == "error: give either a query text or --queries FILE\n"


def test_a_cold_query_process_answers_as_a_fully_checked_load(tmp_path):
    """The cold path (a new process, the size/mtime fast path, imports deferred until used) returns the same
    hits, scores and texts as a load that re-hashes the store (``full_check=True``)."""
    tree = tmp_path / "kw"
    assert CliRunner().invoke(index_commands.app, ["keyword", "--corpus", str(EXAMPLE_CORPUS), "--out",
                                                           str(tree)]).exit_code == 0
    cold = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "query", str(tree), "saturating term frequency",
                           "--json"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert cold.returncode == 0, cold.stderr
    chunks, _ = dashrag.load(tree, full_check=True).retrieve("saturating term frequency")
    printed = json.loads(cold.stdout)["results"]
    assert printed and [(r["chunk_id"], r["document_id"], r["text"]) for r in printed] == [
        (c.chunk.id, c.document_id, c.chunk.text) for c in chunks]
    assert [r["score"] for r in printed] == [c.score for c in chunks]

