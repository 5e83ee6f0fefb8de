"""The service of this checkout against the service of another checkout, side by side: did a change cut overhead?

Both servers are ``dashrag serve`` over the same saved trees (bench_service.py's, built there
first), the other one run from ``--other`` (a checkout of an earlier commit, e.g. made by
``git worktree add`` or ``git archive REV | tar -x -C DIR``) with ``PYTHONPATH`` pointing at it.
Per query, every variant (each server, with and without a trace) is asked in a rotating order,
best of --rounds; printed per tree: the p50 of each, "beyond the tree's own time" (HTTP with a
trace − the tree's ``elapsed_ms`` in it) of each, and whether the untraced bodies are byte-identical.

    nice -n 19 .venv/bin/python bench/bench_service_ab.py --other /tmp/base [--docs 500] [--queries 100]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from bench_service import SCIFACT, TREES, ensure_trees, post_retrieve

from dashrag.evaluation.beir import load_split


def body_caller(port: int, collection: str, trace: bool) -> Callable[[str], bytes]:
    """POST /retrieve on one keep-alive connection, answering the body (an earlier commit may send no
    Server-Timing header, so the tree's time comes from the trace)."""
    connection = http.client.HTTPConnection("127.0.0.1", port)
    return lambda query: post_retrieve(connection, collection, query, trace)[0]


def tree_ms(raw: bytes) -> float:
    """The tree's own retrieve() time inside the server, from the answer's trace (search → collection → tree)."""
    search = next(n for n in json.loads(raw)["trace"]["children"] if n["component"] == "search")
    return float(search["children"][0]["children"][0]["elapsed_ms"])


def start(trees: Path, log: Path, checkout: Path | None) -> tuple[subprocess.Popen, int]:
    env = {**os.environ, "RAG_PORT": "0", "RAG_LOG_LEVEL": "INFO"}
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    handle = open(log, "w")
    process = subprocess.Popen([sys.executable, "-m", "dashrag.cli.main", "serve", "--trees", str(trees.resolve())],
                               env=env, stderr=handle, stdout=subprocess.DEVNULL, cwd=checkout)
    deadline = time.monotonic() + 300
    while True:
        match = re.search(r"running on http://127\.0\.0\.1:(\d+)", log.read_text())
        if match:
            return process, int(match.group(1))
        if time.monotonic() > deadline or process.poll() is not None:
            raise SystemExit(f"a server did not start; see {log}")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--other", type=Path, required=True, help="The other checkout's root folder.")
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parents[1] / ".dashrag-work"
                        / "bench_service")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    queries = [q for _, q in load_split(SCIFACT, "test").queries.items()][: args.queries]
    trees = ensure_trees(args.work, args.cache_dir, args.docs)
    servers = {"this": start(trees, args.work / "ab-this.log", None),
               "other": start(trees, args.work / "ab-other.log", args.other.resolve())}
    try:
        for tree in TREES:
            for _, port in servers.values():
                body_caller(port, tree, trace=False)(queries[0])  # load the model sessions, unmeasured
            calls = {(name, trace): body_caller(port, tree, trace)
                     for name, (_, port) in servers.items() for trace in (False, True)}
            best = {key: [float("inf")] * len(queries) for key in calls}
            beyond = {name: [float("inf")] * len(queries) for name in servers}
            identical = 0
            for round_ in range(args.rounds):
                for i, query in enumerate(queries):
                    keys = list(calls)
                    shift = (i + round_) % len(keys)
                    bodies = {}
                    for key in keys[shift:] + keys[:shift]:
                        start_s = time.perf_counter()
                        bodies[key] = calls[key](query)
                        elapsed = (time.perf_counter() - start_s) * 1000
                        best[key][i] = min(best[key][i], elapsed)
                        if key[1]:
                            beyond[key[0]][i] = min(beyond[key[0]][i], elapsed - tree_ms(bodies[key]))
                    identical += bodies[("this", False)] == bodies[("other", False)]
            print(f"{tree}: untraced bodies byte-identical {identical}/{len(queries) * args.rounds}; "
                  f"load average {os.getloadavg()[0]:.1f}")
            for name in servers:
                print(f"  {name:6} p50 {statistics.median(best[(name, False)]):.3f} ms, with a trace "
                      f"{statistics.median(best[(name, True)]):.3f} ms, beyond the tree's own time "
                      f"{statistics.median(beyond[name]):.3f} ms")
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
