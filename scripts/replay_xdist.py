"""Replay pytest-xdist's ``--dist loadfile`` schedule on two workers with the test seconds of a recorded run.

Why: whether an order of the files ends both workers together can be seen without a whole run of the suite
(tens of minutes of two shared cores). The replay follows xdist's rule (``LoadScopeScheduling``): each worker
starts with one file and is given another while it has two tests or fewer left, in the queue's order; a test
takes the seconds it took in the recorded run. It prints when each worker would end, for xdist's own order (the
files with the most tests first, ``--loadscope-reorder``) and for the files holding a slow test first
(``tests/conftest.py:slow_files_first`` with ``--no-loadscope-reorder``, what ``scripts/test.sh`` runs).

    pytest --co -p no:xdist tests | grep :: > ids.txt
    pytest --co -p no:xdist -m slow tests | grep :: | cut -d: -f1 | sort -u > slow.txt
    python scripts/replay_xdist.py run.xml ids.txt slow.txt
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path


def recorded_seconds(junit: Path) -> dict[tuple[str, str], float]:
    """Each test's seconds (set-up, call, tear-down) by (dotted module, test name), as JUnit XML records them."""
    return {(case.get("classname", ""), case.get("name", "")): float(case.get("time", 0))
            for case in ET.parse(junit).iter("testcase")}


def key_of(node_id: str) -> tuple[str, str]:
    path, _, name = node_id.partition("::")
    return path.removesuffix(".py").replace("/", "."), name.split("::")[-1]


def replay(queue: list[list[float]], workers: int = 2) -> list[float]:
    """When each worker ends, given the files' test seconds in the order they are handed out."""
    queue = [list(tests) for tests in queue]
    ends, pending = [0.0] * workers, [[] for _ in range(workers)]

    def give(worker: int, at_most: int = 2) -> None:
        if queue and len(pending[worker]) <= at_most:
            pending[worker].extend(queue.pop(0))

    for worker in range(workers):  # one file each, then a second to any worker with two tests or fewer
        give(worker, at_most=0)
    for worker in range(workers):
        give(worker)
    while any(pending):
        worker = min((w for w in range(workers) if pending[w]), key=lambda w: ends[w] + pending[w][0])
        ends[worker] += pending[worker].pop(0)
        give(worker)
    return ends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit", type=Path, help="JUnit XML of a recorded run")
    parser.add_argument("ids", type=Path, help="the collected node ids, one a line (pytest --co)")
    parser.add_argument("slow", type=Path, help="the files holding a slow test, one a line")
    args = parser.parse_args()
    seconds = recorded_seconds(args.junit)
    files: dict[str, list[float]] = {}
    for line in args.ids.read_text(encoding="utf-8").splitlines():
        if "::" in line:
            files.setdefault(line.split("::")[0], []).append(seconds.get(key_of(line.strip()), 0.0))
    slow = set(args.slow.read_text(encoding="utf-8").split())
    collected = sorted(files, key=lambda path: path.split("/"))  # pytest's order: each folder's entries by name
    orders = {"xdist's own (most tests first)": sorted(collected, key=lambda path: -len(files[path])),
              "slow files first": sorted(collected, key=lambda path: path not in slow)}
    print(f"{sum(map(len, files.values()))} tests, {sum(map(sum, files.values())):.0f} s recorded")
    for name, order in orders.items():
        print(f"{name}: the workers end at {', '.join(f'{end:.0f} s' for end in replay([files[p] for p in order]))}")


if __name__ == "__main__":
    main()
