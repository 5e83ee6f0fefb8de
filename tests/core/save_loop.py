"""Helpers of the crash and concurrency tests: two fitted trees, and a process body that saves them in turn.

The trees differ in config (``top_k``), so a load tells which save it got; the
processes are forked from the test, so they start in milliseconds and save the
very trees the test compares against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dashrag

CONFIGS = ({"component": "TFIDFRetriever", "params": {"top_k": 3}},
           {"component": "TFIDFRetriever", "params": {"top_k": 7}})
QUERY = "how do rankers saturate term frequency"


def fitted_trees(corpus: dashrag.Corpus, workdir: Path) -> list:
    return [dashrag.build(config, corpus, workdir / f"tree{i}") for i, config in enumerate(CONFIGS)]


def save_forever(trees: list, folder: Path, first: int = 0, saves: Any = None) -> None:
    """Save the trees to ``folder`` in turn until killed (the body of a forked saver);
    ``saves`` (a shared counter) counts the completed saves."""
    turn = first
    while True:
        trees[turn % len(trees)].save(folder)
        turn += 1
        if saves is not None:
            with saves.get_lock():
                saves.value += 1
