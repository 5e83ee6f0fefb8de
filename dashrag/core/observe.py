"""The one place a finished query is handed to an observer (OpenTelemetry export: dashrag/telemetry/).

Why a slot and not instrumentation in every component: the trace node tree already records what
each component did, so an observer derives its spans from the root's node. With no observer
(the default) a query pays one global read; nothing else is imported or timed.

With an observer, the outermost query in a context is the *root*: it collects the wall-clock
start of every node beneath it (keyed by the node's identity, in a context variable, so children
run on other threads by Parallel are still found), and hands the observer one :class:`QueryRecord`
when it ends. Queries made inside a root are never reported on their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class QueryRecord:
    """One root query: its trace node, the wall-clock start of each node by ``id()``, its end, its ``top_k``."""

    node: dict[str, Any]
    start_ns: int
    end_ns: int
    top_k: int | None = None
    starts: dict[int, int] = field(default_factory=dict)


class QueryObserver(Protocol):
    def __call__(self, record: QueryRecord) -> None: ...


observer: QueryObserver | None = None
_starts: ContextVar[dict[int, int] | None] = ContextVar("dashrag_node_starts", default=None)

Answer = tuple[Any, dict]


def set_observer(new: QueryObserver | None) -> None:
    global observer
    observer = new


def observed(answer: Callable[[], Answer], top_k: int | None) -> Answer:
    """``answer()``, noting its node's start; reported to the observer when this is the root query."""
    starts = _starts.get()
    token = _starts.set({}) if starts is None else None
    begun = time.time_ns()
    try:
        chunks, node = answer()
    finally:
        mine = _starts.get()
        if token is not None:
            _starts.reset(token)
    assert mine is not None
    mine[id(node)] = begun
    if token is not None and observer is not None:
        observer(QueryRecord(node, begun, time.time_ns(), top_k, mine))
    return chunks, node


def observed_batch(answers: Callable[[], Sequence[Answer]], top_k: int | None) -> Sequence[Answer]:
    """``answers()`` for a batch; at the root, each query is reported with its share of the batch's time."""
    if _starts.get() is not None:
        return answers()
    token = _starts.set({})
    begun = time.time_ns()
    try:
        batch = answers()
    finally:
        _starts.reset(token)
    share = (time.time_ns() - begun) // max(1, len(batch))
    for i, (_, node) in enumerate(batch):
        if observer is not None:
            observer(QueryRecord(node, begun + i * share, begun + (i + 1) * share, top_k))
    return batch


@contextmanager
def unobserved() -> Iterator[None]:
    """Queries made inside are not reported (the service's calibration queries at load time, say)."""
    token = _starts.set({})
    try:
        yield
    finally:
        _starts.reset(token)
