"""``cli/progress_lines.py``: counts, a steady estimate, and plain lines when not in a terminal (issue 39)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from dashrag.cli.progress_lines import EVERY_S, StageProgress, describe, duration
from dashrag.core.progress import seconds_left
from tests.conftest import EXAMPLE_CORPUS


def test_the_estimate_is_the_stages_average_rate_times_the_work_left():
    assert seconds_left(30.0, 100, 400) == 90.0
    assert seconds_left(30.0, 0, 400) is None and seconds_left(30.0, 10, None) is None


def test_the_estimate_is_steady_when_the_rate_is():
    assert [seconds_left(t, 10 * t, 1000) for t in (1.0, 5.0, 20.0, 50.0)] == [99.0, 95.0, 80.0, 50.0]


def test_a_line_says_the_counts_the_share_the_time_spent_and_the_time_left():
    assert describe("embedding chunks", 120, 1000, 14.0) == \
        "embedding chunks 120/1000 (12%), 14 s, about 1 min 43 s left"
    assert describe("saving", 0, None, 2.4) == "saving, 2 s"
    assert describe("fitting", 5, 5, 3.0) == "fitting 5/5 (100%), 3 s"
    assert duration(3725) == "1 h 02 min"


def test_plain_lines_come_at_a_stages_start_and_end_and_at_most_every_few_seconds_between():
    now = [0.0]
    out = io.StringIO()
    progress = StageProgress(stream=out, clock=lambda: now[0])
    for done in range(0, 101, 10):
        progress("embedding chunks", done, 100)
        now[0] += EVERY_S / 2
    lines = out.getvalue().splitlines()
    assert lines[0] == "progress: embedding chunks 0/100 (0%), 0 s"
    assert [line.split()[3] for line in lines] == ["0/100", "20/100", "40/100", "60/100", "80/100", "100/100"]


@pytest.mark.slow
def test_index_piped_writes_plain_progress_lines_with_counts(tmp_path):
    ran = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "index", "keyword", "--corpus", str(EXAMPLE_CORPUS),
                          "--out", str(tmp_path / "tree")], capture_output=True, text=True, env=os.environ, timeout=300)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert "progress: chunking 8/8 (100%), 0 s" in lines
    assert any(line.startswith("progress: fitting 0/") for line in lines)
