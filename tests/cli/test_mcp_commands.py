"""``dashrag mcp``'s own errors, as a user meets them: one line on stderr, exit 2, before any protocol starts."""

from __future__ import annotations

import subprocess
import sys


def test_a_missing_trees_folder_is_one_error_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "mcp", "--trees", str(tmp_path / "nope")],
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == f"error: --trees {tmp_path / 'nope'}: no such folder"


def test_mcp_alone_of_a_missing_trees_folder_is_one_error_line(tmp_path):
    """The command module driven by itself (its own typer app, no main.py)."""
    from typer.testing import CliRunner

    from dashrag.cli import mcp_commands

    result = CliRunner().invoke(mcp_commands.app, ["--trees", str(tmp_path / "nope")])
    assert result.exit_code == 2 and result.stderr == f"error: --trees {tmp_path / 'nope'}: no such folder\n"
