"""How a long operation (a build, an update) says where it is: one callable, every face.

A build reports its stages as ``progress(stage, done, total)``: ``stage`` is a short
English phrase ("chunking", "fitting", "embedding chunks"), ``done`` what is finished
of it, ``total`` how much there is (None when unknown). The CLI shows it as a status
line, the service's build jobs turn it into ``GET /jobs/{id}``, the page into a bar
with counts. Components that spend time in batches (embedding a corpus) report through
``Infra.progress``, so a stage moves while it runs instead of jumping at its end.

The callable may raise to stop the operation (the service's *cancel*): the build
unwinds like any failure and leaves nothing behind (dashrag/api.py, ``build_tree``).
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def __call__(self, stage: str, done: int = 0, total: int | None = None) -> None: ...


def seconds_left(spent: float, done: int, total: int | None) -> float | None:
    """What is left of a stage at its average rate so far (``spent`` seconds for ``done`` of ``total``); None
    without a total or before any work is done. The whole stage's average, not the last batch's, so the
    estimate is steady (the CLI's status line and the build job's ``stage_eta_s`` both read it)."""
    if total is None or done <= 0 or done > total:
        return None
    return spent * (total - done) / done


def no_progress(stage: str, done: int = 0, total: int | None = None) -> None:
    """The default: nobody is watching."""


__all__ = ["Progress", "no_progress", "seconds_left"]
