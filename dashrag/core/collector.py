"""Pausing Python's cyclic garbage collector while a saved tree is read.

Why: a load makes tens of thousands of small objects that live as long as the tree (a chunk
per row, the vocabulary's entries, the row look-ups), and every few hundred allocations the
collector walks the objects of the whole process, the imported libraries' (pydantic, numpy)
included, with little to free: on SciFact's keyword tree about 15 ms of a 0.37 s cold query on quiet
cores, several times that under load (docs/performance.md). None of what a load makes is cyclic garbage, so
the collector waits until the load is done; reference counting frees as usual meanwhile.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the block, then on again if it was on (a load in another thread that
    ends first turns it on early: a slower load, never a wrong one)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
