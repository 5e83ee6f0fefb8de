"""``dashrag.cli.index_commands`` driven alone: a tree is built and saved, and loads."""

from __future__ import annotations

from typer.testing import CliRunner

import dashrag
from dashrag.cli import index_commands
from tests.conftest import EXAMPLE_CORPUS


def test_index_alone_saves_a_tree_that_answers(tmp_path):
    out = tmp_path / "tree"
    result = CliRunner().invoke(index_commands.app, ["keyword", "--corpus", str(EXAMPLE_CORPUS), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith("indexed ")
    chunks, _ = dashrag.load(out).retrieve("rank fusion")
    assert chunks


def test_index_alone_refuses_a_saved_tree_without_overwrite(tmp_path):
    out = tmp_path / "tree"
    args = ["keyword", "--corpus", str(EXAMPLE_CORPUS), "--out", str(out)]
    assert CliRunner().invoke(index_commands.app, args).exit_code == 0
    again = CliRunner().invoke(index_commands.app, args)
    assert again.exit_code == 2 and again.stderr.startswith("error: ") and "--overwrite" in again.stderr
