"""``dashrag.cli.serve_commands`` driven alone: a settings problem is one error line before a server starts
(the served API itself is tested over HTTP in tests/service/)."""

from __future__ import annotations

from typer.testing import CliRunner

from dashrag.cli import serve_commands


def test_serve_alone_of_a_missing_trees_folder_is_one_error_line_exit_2(tmp_path):
    result = CliRunner().invoke(serve_commands.app, ["--trees", str(tmp_path / "absent"), "--port", "0"])
    assert result.exit_code == 2
    assert result.stderr == f"error: --trees {tmp_path / 'absent'}: no such folder\n"
