"""A build or update job's work in its own process, so the service can hold it to a memory and a time limit.

A thread cannot be stopped from outside and shares the server's memory: a client's config that
allocates gigabytes, or a stage that never reports, would take the whole service with it. So each
job runs ``python -m dashrag.service.build_worker`` (the same interpreter and package), which caps its
address space (``RLIMIT_AS`` = ``build_memory_mb``) and then calls :func:`dashrag.api.build_tree` or
:func:`dashrag.api.update_tree`, the one build and update of every face. Its stages come back over
a pipe as JSON lines; the parent kills it at the time limit (whatever stage it is in, silent or not)
or on cancel. Both functions are crash-safe (a temporary store, the manifest switched last), so a
killed worker leaves the old tree or none (docs/security.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import dashrag
from dashrag.core.progress import Progress
from dashrag.errors import DashragError


class BuildStopped(DashragError):
    """The worker was stopped by a limit (memory, time) or ended without a result; the job fails."""


class WorkerFailed(DashragError):
    """The build or update failed in the worker; the message is the one it may show (``safe_message``)."""


@dataclass(frozen=True)
class WorkerLimits:
    """What one job may use: ``memory_mb`` of address space and ``timeout_s`` of wall time (None: no limit)."""

    memory_mb: int | None = None
    timeout_s: float | None = None


def _worker_env() -> dict[str, str]:
    # the worker imports this very package, wherever it was imported from (a checkout, a wheel)
    root = str(Path(dashrag.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _read_lines(stream: IO[str], lines: list[dict[str, Any]], arrived: threading.Event) -> None:
    for line in stream:
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # not ours (the worker sends its own output to stderr; this is a safety net)
        arrived.set()
    arrived.set()


def run_in_worker(task: dict[str, Any], limits: WorkerLimits, progress: Progress,
                  check: Callable[[], None]) -> dict[str, Any]:
    """Run ``task`` (see build_worker) in a worker process and return its result. Its stages go to
    ``progress``; ``check`` is called every 0.1 s; either may raise to cancel (the worker is killed).
    Raises BuildStopped at a limit, WorkerFailed when the work failed."""
    deadline = None if limits.timeout_s is None else time.monotonic() + limits.timeout_s
    worker = subprocess.Popen([sys.executable, "-m", "dashrag.service.build_worker"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=None, env=_worker_env(), text=True, encoding="utf-8")
    lines: list[dict[str, Any]] = []
    arrived = threading.Event()
    reader = threading.Thread(target=_read_lines, args=(worker.stdout, lines, arrived), daemon=True)
    reader.start()
    try:
        assert worker.stdin is not None
        worker.stdin.write(json.dumps({**task, "memory_mb": limits.memory_mb}))
        worker.stdin.close()
        seen = 0
        while True:
            arrived.wait(timeout=0.1)
            arrived.clear()
            while seen < len(lines):
                line = lines[seen]
                seen += 1
                if "progress" in line:
                    progress(*line["progress"])
                elif "result" in line:
                    return line["result"]
                elif "error" in line:
                    if line.get("memory"):
                        raise BuildStopped(f"build stopped: over the memory limit of {limits.memory_mb} MB")
                    raise WorkerFailed(line["error"])
            check()
            if deadline is not None and time.monotonic() > deadline:
                raise BuildStopped(f"build stopped: over the time limit of {limits.timeout_s:g} s")
            if worker.poll() is not None and not reader.is_alive() and seen == len(lines):
                raise BuildStopped(_ended_without_result(worker.returncode, limits))
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait()
        reader.join(timeout=5)


def run_in_this_process(task: dict[str, Any], limits: WorkerLimits, progress: Progress) -> dict[str, Any]:
    """Run ``task`` in the service's own process: for a served tree whose engine folder only one process may
    open (an embedded Qdrant Edge folder), which the serving process already holds. No process to kill, so the
    time limit is checked at each progress report and the memory cap does not apply (docs/updating.md)."""
    from dashrag.service.build_worker import perform

    deadline = None if limits.timeout_s is None else time.monotonic() + limits.timeout_s

    def reported(stage: str, done: int = 0, total: int | None = None) -> None:
        if deadline is not None and time.monotonic() > deadline:
            raise BuildStopped(f"build stopped: over the time limit of {limits.timeout_s:g} s")
        progress(stage, done, total)

    return perform(task, reported)


def _ended_without_result(code: int, limits: WorkerLimits) -> str:
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    cap = f" (it may have run over the memory limit of {limits.memory_mb} MB)" if limits.memory_mb else ""
    return f"build stopped: the build process {how} without a result{cap}"


__all__ = ["BuildStopped", "WorkerFailed", "WorkerLimits", "run_in_this_process", "run_in_worker"]
