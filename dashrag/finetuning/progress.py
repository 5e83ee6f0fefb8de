"""Progress reports from the trainers and the pipeline: one callback, any display.

A step (``mine``, ``train``, ``embed``, ``tune``, ...) reports ``(step, done, total)``; the CLI
shows each as a rich bar with elapsed and remaining time (the time estimate), a library caller
passes its own function or nothing.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import wraps
from typing import Any, Callable, Iterator, Protocol, TypeVar

Progress = Callable[[str, int, int], None]


def no_progress(step: str, done: int, total: int) -> None:
    """The default: report nothing."""


def counter(progress: Progress, step: str, total: int) -> Callable[[int], None]:
    """Report ``step`` at 0 of ``total`` now; the returned callback adds ``n`` finished items and reports again
    (the shape of the ``on_batch`` hooks of ranking and evaluation)."""
    done = 0
    progress(step, done, total)

    def advance(n: int) -> None:
        nonlocal done
        done += n
        progress(step, done, total)

    return advance


class _StepState(Protocol):
    global_step: int
    max_steps: int


def trainer_callback(progress: Progress, step: str = "train") -> Any:
    """A transformers ``TrainerCallback`` that reports every optimiser step as ``step``."""
    from transformers import TrainerCallback

    class ReportSteps(TrainerCallback):
        def on_step_end(self, args: Any, state: _StepState, control: Any, **kwargs: Any) -> None:
            progress(step, int(state.global_step), int(state.max_steps))

    return ReportSteps()


@contextmanager
def quiet_libraries() -> Iterator[None]:
    """Silence the libraries' own bars and log lines (weights loading, shard writing, the trainer's
    printed loss dicts) while a trainer runs: the caller's ``Progress`` is the one display."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from transformers.utils import logging as hf_logging

    bars_were_off = are_progress_bars_disabled()
    verbosity = hf_logging.get_verbosity()
    disable_progress_bars()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()
        if not bars_were_off:
            enable_progress_bars()


def without_printed_logs(trainer: Any) -> Any:
    """A trainer with ``disable_tqdm`` prints every log dict; the report carries the figures instead."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    return trainer


F = TypeVar("F", bound=Callable[..., Any])


def quietly(function: F) -> F:
    """Run ``function`` inside :func:`quiet_libraries`."""

    @wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        with quiet_libraries():
            return function(*args, **kwargs)

    return run  # type: ignore[return-value]
