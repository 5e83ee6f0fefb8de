"""README's shell blocks marked ``<!-- runs-as-written ... -->`` run as a user pastes them (issue 39).

Each marked block runs with ``bash -euo pipefail`` in an empty folder of its own that holds only what a
checkout gives a user there: ``examples/`` and ``.venv`` (links to this checkout's), so ``source
.venv/bin/activate`` and ``examples/corpus`` work; ``PYTHONPATH`` points at this checkout, so the code under
test is this tree's. A block marked ``slow`` (it embeds) is a slow test. Blocks that start a server or read
SciFact are not marked; the marker sits on the line before the fence.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.conftest import REPO

MARKED = re.compile(r"<!-- runs-as-written(?P<slow>: slow)?[^>]*-->\n```bash\n(?P<body>.*?)```", re.S)


def marked_blocks() -> list:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [pytest.param(m.group("body"), id=f"line{text.count(chr(10), 0, m.start()) + 1}",
                         marks=[pytest.mark.slow] if m.group("slow") else [])
            for m in MARKED.finditer(text)]


def test_the_readme_marks_the_command_line_and_the_quick_start():
    assert len(marked_blocks()) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("block", marked_blocks())
def test_a_marked_readme_block_runs_as_written(block, tmp_path):
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"}
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=900)
    assert ran.returncode == 0, f"exit {ran.returncode}\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    assert "Traceback" not in ran.stderr and "error:" not in ran.stderr
