"""Where the test suite's time goes, from pytest's JUnit XML (``pytest --junitxml=FILE``).

Prints two Markdown tables: seconds per test directory (with the count of tests), and the slowest
tests. Given two files (before, after), the directory table shows them side by side. A test's time
in the XML is its set-up + call + tear-down, so a module- or session-scoped fixture is charged to the
first test that needs it; under pytest-xdist the seconds add up the workers' time, not the wall time.
``--cpu`` reads the CPU seconds the test run recorded instead (``tests/fixtures/cpu_time.py``): on shared
cores they say what a test costs, where its wall time also says how busy the machine was.

    python scripts/test_durations.py before.xml [after.xml] [--slowest 20] [--cpu] [--workers]

docs/testing.md holds the tables this prints.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

CPU_PROPERTY, WORKER_PROPERTY, ENDED_PROPERTY = "cpu_s", "worker", "ended_s"  # tests/fixtures/cpu_time.py


def test_times(junit_xml: Path, cpu: bool = False) -> dict[str, float]:
    """Seconds per test id (``tests/dir/test_x.py::name``) from a JUnit XML file: wall, or with ``cpu`` the
    CPU seconds recorded as the test's ``cpu_s`` property (0 for a test without one)."""
    times: dict[str, float] = {}
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        if cpu:
            recorded = [p.get("value") for p in case.iter("property") if p.get("name") == CPU_PROPERTY]
            seconds = float(recorded[0]) if recorded else 0.0
        else:
            seconds = float(case.get("time") or 0.0)
        times[f"{module}::{case.get('name')}"] = seconds
    return times


def directory_of(test_id: str) -> str:
    """``tests/retrievers/test_dense/...::name`` → ``tests/retrievers``; a test file at the top → ``tests``."""
    parts = test_id.split("::")[0].split("/")
    module_at = next((i for i, part in enumerate(parts) if part.startswith("test_")), len(parts))
    return "/".join(parts[:min(module_at, 2)]) or "tests"


def by_directory(times: dict[str, float]) -> dict[str, tuple[int, float]]:
    """(count of tests, seconds) per directory."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for test_id, seconds in times.items():
        total = totals[directory_of(test_id)]
        total[0] += 1
        total[1] += seconds
    return {directory: (int(count), seconds) for directory, (count, seconds) in totals.items()}


def directory_table(runs: list[dict[str, float]], labels: list[str]) -> str:
    tables = [by_directory(times) for times in runs]
    directories = sorted(set().union(*tables), key=lambda d: -max(t.get(d, (0, 0.0))[1] for t in tables))
    header = "| directory | " + " | ".join(f"tests ({label}) | s ({label})" for label in labels) + " |"
    rows = [header, "|---|" + "---:|---:|" * len(labels)]
    for directory in [*directories, "**total**"]:
        cells = []
        for table in tables:
            count, seconds = (sum(c for c, _ in table.values()), sum(s for _, s in table.values())) \
                if directory == "**total**" else table.get(directory, (0, 0.0))
            cells.append(f"{count} | {seconds:.0f}")
        rows.append(f"| {directory} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def slowest_table(times: dict[str, float], n: int) -> str:
    rows = ["| s | test |", "|---:|---|"]
    slowest = sorted(times.items(), key=lambda kv: -kv[1])[:n]
    rows += [f"| {seconds:.1f} | `{test_id}` |" for test_id, seconds in slowest]
    return "\n".join(rows)


def worker_table(junit_xml: Path) -> str:
    """Each pytest-xdist worker's tests, CPU seconds and when its last test ended (seconds after the first test of
    the run ended): a worker that ends long before the other left a core idle at the end (``--dist loadfile``
    sends a whole file to one worker)."""
    workers: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    first = None
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        recorded = {p.get("name"): p.get("value") for p in case.iter("property")}
        if ENDED_PROPERTY not in recorded:
            continue
        ended = float(recorded[ENDED_PROPERTY])
        first = ended if first is None else min(first, ended)
        row = workers[recorded.get(WORKER_PROPERTY, "?")]
        row[0] += 1
        row[1] += float(recorded.get(CPU_PROPERTY) or 0.0)
        row[2] = max(row[2], ended)
    rows = ["| worker | tests | CPU s | last test ended (s) |", "|---|---:|---:|---:|"]
    rows += [f"| {name} | {count:.0f} | {cpu:.0f} | {last - (first or last):.0f} |"
             for name, (count, cpu, last) in sorted(workers.items())]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit_xml", nargs="+", type=Path, help="one run, or two (before, after)")
    parser.add_argument("--slowest", type=int, default=20, help="how many of the slowest tests to list (last run)")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds (recorded by the tests) instead of wall")
    parser.add_argument("--workers", action="store_true", help="also each xdist worker's timeline (last run)")
    args = parser.parse_args()
    runs = [test_times(path, args.cpu) for path in args.junit_xml]
    labels = ["before", "after"] if len(runs) == 2 else [path.stem for path in args.junit_xml]
    print(directory_table(runs, labels))
    print()
    print(slowest_table(runs[-1], args.slowest))
    if args.workers:
        print()
        print(worker_table(args.junit_xml[-1]))


if __name__ == "__main__":
    main()
