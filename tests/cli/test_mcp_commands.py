"""``dashrag mcp``'s own errors, as a user meets them: one line on stderr, exit 2, before any protocol starts."""

from __future__ import annotations

import subprocess
import sys


def test_a_missing_trees_folder_is_one_error_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "mcp", "--trees", str(tmp_path / "nope")],
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == f"error: --trees {tmp_path / 'nope'}: no such folder"
