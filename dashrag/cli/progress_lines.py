"""A long command's progress with counts and an estimate: a status line in a terminal, plain lines elsewhere.

``dashrag eval hybrid_rrf`` embeds for minutes; behind a bare spinner a user could not tell minutes
from hours, and with stderr piped to a log (CI, ``nohup``) nothing was written at all (issue 39). The
estimate is the stage's average rate so far (time spent / work done, times the work left): steady,
because it averages the whole stage rather than the last batch; none before the first batch is done.
Not a terminal: one ``progress:`` line on stdout (beside the command's own lines; stderr keeps its one
``error:`` line for a refused command) when a stage starts, when it ends and at most every
``EVERY_S`` seconds between.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from dashrag.cli.safe_text import plain
from dashrag.core.progress import seconds_left

EVERY_S = 5.0  # seconds between plain lines within a stage: a log stays readable, a stall stays visible


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``: what a person reads at a glance."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def describe(stage: str, done: int, total: int | None, elapsed: float) -> str:
    """``embedding chunks 120/1000 (12%), 14 s, about 1 min 43 s left``."""
    if total is None:
        return f"{stage}, {duration(elapsed)}"
    share = f" ({100 * done // total}%)" if total else ""
    left = seconds_left(elapsed, done, total)
    return f"{stage} {done}/{total}{share}, {duration(elapsed)}" + (
        f", about {duration(left)} left" if left is not None and done < total else "")


class StageProgress:
    """A :class:`~dashrag.core.progress.Progress`: each call says the stage, its counts and the time left, on
    ``status`` (a rich status, in a terminal) or as plain lines on ``stream`` (default: stdout)."""

    def __init__(self, status: Any = None, stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.status, self.stream, self.clock = status, stream, clock
        self.stage: str | None = None
        self.started = self.written = 0.0

    def __call__(self, stage: str, done: int = 0, total: int | None = None) -> None:
        now = self.clock()
        starts = stage != self.stage
        if starts:
            self.stage, self.started = stage, now
        text = describe(stage, done, total, now - self.started)
        if self.status is not None:
            self.status.update(plain(text))
        elif starts or done == total or now - self.written >= EVERY_S:
            print(f"progress: {plain(text)}", file=self.stream or sys.stdout, flush=True)
            self.written = now


@contextmanager
def shown_progress(console: Any, first: str) -> Iterator[StageProgress]:
    """A terminal: a rich status line, cleared at the end; anything else: plain lines on stdout."""
    if not console.is_terminal:
        progress = StageProgress()
        progress(first)
        yield progress
        return
    with console.status(plain(first)) as status:
        yield StageProgress(status)
