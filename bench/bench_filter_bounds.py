"""Issue 38's filter probe re-measured: what the probe's filters cost now, what the largest allowed ones cost, and
how fast ``/health`` answers while four of them run at once.

The probe (under the 1 MiB body limit): ``$or`` of 50,000 terms, ``$and`` of 40,000, ``$in`` of 140,000 values:
1.3-4.7 s per query in process and on Qdrant Edge, 16-21 s on PostgreSQL, and ``/health`` in 8 s while four
ran. Now the filter language refuses them while parsing (docs/filters.md, "Limits"); the figure is the time
until the refusal. Beside them, the largest filters the bounds allow (999 ``$or`` terms, 499 ``$ne`` under
``$and``, ``$in`` of 10,000 values) and the unfiltered query, per place: in process, Qdrant Edge, PostgreSQL (a
local server started and stopped here, as the tests do). SciFact's documents with bench_filters.py's synthetic
``bucket`` metadata, a BM25 tree, top 10; every timed call uses a filter not asked before (a value no document
has is varied), so no kept mask (filters/masks.py) hides the cost; best of ``--repeats``.

Then ``/health``: the in-process tree served on loopback in a process of its own, four threads of another
process posting the largest allowed filters to ``/trees/{name}/query`` for ``--seconds``, and ``/health`` asked
every 50 ms from this one meanwhile (median, p99, worst); each process has its own GIL, so the figure is the
server's alone (it was all one process before, the clients' JSON work waiting on the same GIL). Twice in one
run: the app on plain uvicorn (``UNTUNED_SERVER``: 5 ms switch interval, nothing frozen), from a checkout of
the commit to compare with when ``--before`` names one, and ``dashrag serve`` (docs/security.md, "The event
loop under load").

``.venv/bin/python bench/bench_filter_bounds.py`` (a few minutes); the load average is printed beside.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

import dashrag
from dashrag.engines.local_postgres import temporary_server
from dashrag.errors import FilterError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_filters import corpus_with_metadata, engine_indexes, scifact_test_queries, tree_config  # noqa: E402

QUERY = "cancer cell growth"
TERMS = ["$or", "$and"]


def probes(variant: int) -> dict[str, dict]:
    """The probe's filters, and the largest allowed, each with a value no document has (``-variant``)."""
    miss = -1 - variant
    return {
        "probe: $or of 50,000": {"$or": [{"bucket": miss}] + [{"bucket": i} for i in range(49_999)]},
        "probe: $and of 40,000": {"$and": [{"bucket": {"$ne": miss}}] + [{"bucket": {"$ne": 2000 + i}}
                                                                         for i in range(39_999)]},
        "probe: $in of 140,000": {"bucket": {"$in": [miss] + list(range(139_999))}},
        "largest: $or of 999": {"$or": [{"bucket": miss}] + [{"bucket": i} for i in range(998)]},
        "largest: $and of 499 $ne": {"$and": [{"bucket": {"$ne": miss}}] + [{"bucket": {"$ne": 2000 + i}}
                                                                            for i in range(498)]},
        "largest: $in of 10,000": {"bucket": {"$in": [miss] + list(range(9_999))}},
        "unfiltered": {},
    }


def timed(tree, filters: dict) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        tree.retrieve(QUERY, filters=filters or None)
        outcome = "answered"
    except FilterError:
        outcome = "refused"
    return time.perf_counter() - started, outcome


def measure(tree, repeats: int, variants: itertools.count) -> dict[str, tuple[float, str]]:
    tree.retrieve(QUERY)  # first-use costs (metadata columns) out of the figures
    best: dict[str, tuple[float, str]] = {}
    for _ in range(repeats):
        for name, filters in probes(next(variants)).items():
            seconds, outcome = timed(tree, filters)
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, outcome)
    return best


# create_app on plain uvicorn, the interpreter untouched (5 ms switch interval, nothing frozen): how main served
# before issue 38's last item (run it from that checkout with --before), or this app without dashrag serve's tuning.
UNTUNED_SERVER = ("import sys, uvicorn; from dashrag.service.app import create_app; "
                  "from dashrag.service.settings import ServiceSettings; "
                  "uvicorn.run(create_app(ServiceSettings(trees_dir=sys.argv[1], log_level='WARNING')), "
                  "host='127.0.0.1', port=int(sys.argv[2]), log_config=None, access_log=False, log_level='warning')")


def served(trees: Path, tuned: bool, code: Path | None = None) -> tuple[subprocess.Popen, str]:
    """The service over ``trees`` in a process of its own (as a user runs it), and its URL once it answers:
    ``dashrag serve`` when ``tuned``, else :data:`UNTUNED_SERVER`, importing dashrag from ``code`` when given
    (a checkout of the commit to compare with)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "dashrag.cli.main", "serve", "--trees", str(trees), "--port", str(port),
               "--log-level", "WARNING"] if tuned else [sys.executable, "-c", UNTUNED_SERVER, str(trees), str(port)]
    env = {**os.environ, **({"PYTHONPATH": str(code)} if code is not None else {})}
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 120
    while time.monotonic() < deadline and server.poll() is None:
        try:
            httpx.get(f"{url}/health", timeout=5)
            return server, url
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"the service did not start ({' '.join(command[:4])} ...)")


def post_largest(url: str, name: str, seconds: float, answered: Any) -> None:
    """The load, in a process of its own (its JSON work is not the server's): four threads posting the largest
    allowed filters to ``/trees/{name}/query`` for ``seconds``; ``answered`` counts the 200s."""
    stop = time.monotonic() + seconds
    variants = itertools.count(10_000)

    def load() -> None:
        with httpx.Client(timeout=120) as client:
            while time.monotonic() < stop:
                for label, filters in probes(next(variants)).items():
                    if label.startswith("largest"):
                        answer = client.post(f"{url}/trees/{name}/query", json={"query": QUERY, "filters": filters})
                        if answer.status_code == 200:
                            with answered.get_lock():
                                answered.value += 1

    workers = [threading.Thread(target=load) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def health_under_load(tree_folder: Path, seconds: float, tuned: bool, code: Path | None = None) -> dict[str, float]:
    """``/health`` asked every 50 ms from this process alone, while :func:`post_largest` runs in another and the
    service in a third: no client's work waits for the server's GIL, or the server's for theirs."""
    server, url = served(tree_folder.parent, tuned, code)
    spawn = multiprocessing.get_context("spawn")
    answered = spawn.Value("i", 0)
    try:
        with httpx.Client(timeout=60) as probe:
            idle = [_health_ms(probe, url) for _ in range(20)]
            load = spawn.Process(target=post_largest, args=(url, tree_folder.name, seconds, answered))
            load.start()
            time.sleep(1.0)  # the four queries under way
            busy = []
            while load.is_alive():
                busy.append(_health_ms(probe, url))
                time.sleep(0.05)
            load.join()
    finally:
        server.terminate()
        server.wait(timeout=30)
    busy.sort()
    return {"idle_median_ms": statistics.median(idle), "busy_median_ms": statistics.median(busy),
            "busy_p99_ms": busy[min(len(busy) - 1, int(len(busy) * 0.99))], "busy_worst_ms": busy[-1],
            "health_calls": len(busy), "queries_answered": answered.value}


def _health_ms(client: httpx.Client, url: str) -> float:
    started = time.perf_counter()
    assert client.get(f"{url}/health").status_code == 200
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--documents", type=int, default=None, help="the first N SciFact documents (default: all)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long /health is asked under load")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--health-only", action="store_true", help="only the /health part (an in-process tree)")
    parser.add_argument("--before", type=Path, default=None, help=(
        "a checkout of the commit to compare with (git archive into a folder): the untuned server imports "
        "dashrag from it (default: this checkout's app without dashrag serve's tuning)"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    corpus = corpus_with_metadata(args.documents)
    scifact_test_queries(1)  # the data is there
    rows: dict[str, dict[str, tuple[float, str]]] = {}
    variants = itertools.count()
    with tempfile.TemporaryDirectory() as work, \
            (temporary_server("dashrag-bench-bounds-") if not args.no_pg else _no_server()) as pg_url:
        for place, indexes in engine_indexes(pg_url).items():
            if args.health_only and place != "in process":
                continue
            folder = Path(work) / "trees" / place.replace(" ", "-").lower()
            tree = dashrag.build(tree_config("keyword", indexes["keyword"]), corpus, Path(work) / f"out-{place}")
            try:
                rows[place] = {} if args.health_only else measure(tree, args.repeats, variants)
                if place == "in process":
                    tree.save(folder)
            finally:
                tree.close()
            print(place, {k: f"{v[0] * 1000:.1f} ms {v[1]}" for k, v in rows[place].items()}, flush=True)
        folder = Path(work) / "trees" / "in-process"
        before = f"before ({args.before.name})" if args.before else "untuned app"
        health = {before: health_under_load(folder, args.seconds, False, args.before),
                  "dashrag serve": health_under_load(folder, args.seconds, True)}
    load_after = os.getloadavg()
    places = list(rows)
    print("\n| filter | " + " | ".join(places) + " |")
    print("|---|" + "---|" * len(places))
    for name in probes(0) if not args.health_only else ():
        cells = [f"{rows[p][name][0] * 1000:.1f} ms ({rows[p][name][1]})" for p in places]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\n/health under four concurrent largest-allowed filtered queries (ms):\n")
    print("| server | idle median | median | p99 | worst | calls | queries answered |")
    print("|---|---|---|---|---|---|---|")
    for label, h in health.items():
        print(f"| {label} | {h['idle_median_ms']:.1f} | {h['busy_median_ms']:.1f} | {h['busy_p99_ms']:.1f} | "
              f"{h['busy_worst_ms']:.1f} | {h['health_calls']} | {h['queries_answered']} |")
    print(f"{len(corpus.documents)} documents, best of {args.repeats}; load average before "
          f"{', '.join(f'{x:.2f}' for x in load_before)}, after {', '.join(f'{x:.2f}' for x in load_after)} "
          f"({os.cpu_count()} cores)")


class _no_server:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    main()
