"""Two processes save one folder in a loop while this one loads it for 4 s: good and failed loads.

Run from the repo root: ``PYTHONPATH=. .venv/bin/python bench/race_saves_and_loads.py``.
Put another dashrag first on PYTHONPATH (``git archive main dashrag components | tar -x -C /tmp/old``,
then ``PYTHONPATH=/tmp/old:.``) to measure it side by side.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from pathlib import Path

import dashrag
from tests.core.save_loop import QUERY, fitted_trees, save_forever

SECONDS = 4.0


def main() -> None:
    fork = multiprocessing.get_context("fork")
    tmp = Path(tempfile.mkdtemp())
    trees = fitted_trees(dashrag.Corpus.from_folder("examples/corpus"), tmp)
    folder = tmp / "saved"
    trees[0].save(folder)
    savers = [fork.Process(target=save_forever, args=(trees, folder, first)) for first in (0, 1)]
    for saver in savers:
        saver.start()
    loads, failures = 0, dict[str, int]()
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        try:
            dashrag.load(folder).retrieve(QUERY)
            loads += 1
        except Exception as exc:  # noqa: BLE001 - counting every failure is the point
            failures[type(exc).__name__] = failures.get(type(exc).__name__, 0) + 1
    for saver in savers:
        saver.kill()
        saver.join()
    print(f"dashrag from {dashrag.__file__}: {loads} loads ok, {sum(failures.values())} failed {failures}")


if __name__ == "__main__":
    main()
