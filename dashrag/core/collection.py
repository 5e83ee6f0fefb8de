"""Pausing CPython's cyclic garbage collector while a batch allocates its results.

A built tree is a long-lived heap (about 150,000 tracked objects for SciFact:
documents, chunks, vocabularies, models), and every automatic full collection
scans all of it again while a batch of queries allocates ScoredChunks, fused
provenance and trace nodes: on a fused hybrid over SciFact that was a fifth of a
batch's time (the figures: docs/architecture.md, "Decisions recorded here").
So a batch runs with automatic collection paused and sweeps the young generations
once at its end: the batch's own cyclic garbage is still freed, what survives is
old and stays unscanned. Only the outermost pause sweeps, the collector's state
is restored on exit, and reference counting frees everything acyclic meanwhile.

A load (``dashrag.load``, and ``dashrag query``'s imports with it) pauses it too and sweeps
nothing: what it makes (a chunk per row, the vocabulary) lives as long as the tree, and the
collections the allocations triggered walked the whole process each time, about 15 ms of a
0.37 s cold keyword query on quiet cores (docs/performance.md).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Callable, Iterator


def _no_sweep() -> None:
    return None


def _sweep_young() -> None:
    gc.collect(1)


@contextmanager
def young_garbage_only() -> Iterator[Callable[[], None]]:
    """Stop automatic collections for the block; yield the sweep of the young generations
    (a no-op inside an enclosing pause, whose owner sweeps)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield _sweep_young if was_enabled else _no_sweep
    finally:
        if was_enabled:
            gc.enable()
