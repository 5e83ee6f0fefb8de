"""``dashrag.cli.pg_commands`` driven alone (the servers themselves: tests/engines/)."""

from __future__ import annotations

from typer.testing import CliRunner

from dashrag.cli import pg_commands


def test_pg_status_alone_of_a_folder_without_a_server_says_so_and_exits_1(tmp_path):
    result = CliRunner().invoke(pg_commands.app, ["status", "--data", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stdout == f"no server is running for {tmp_path}\n"


def test_pg_stop_alone_of_a_folder_no_pg_start_made_is_one_error_line_exit_2(tmp_path):
    result = CliRunner().invoke(pg_commands.app, ["stop", "--data", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr == f"error: PostgreSQL: {tmp_path} is not a data folder made by `dashrag pg start`\n"
