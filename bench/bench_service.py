"""The retrieval service against calling ``retrieve()`` in process: throughput, latency, overhead.

Two trees on the whole of BEIR SciFact (5,183 documents, whole-document chunks): the
``keyword`` preset (BM25) and ``semantic_onnx`` (MiniLM int8 ONNX, cosine). The service is
``dashrag serve`` started as a user starts it (a subprocess on a loopback port, logging at
INFO); the peer is the same saved tree loaded in this process and asked ``retrieve(query,
top_k=10)``, with the service's BLAS setting (``blas_threads``, one thread by default; with numpy's
default of one per core the dense product is ~0.2 ms faster for a lone client, and its idle thread
spins). Clients speak HTTP/1.1 keep-alive through ``http.client`` (one connection per
client) and send ``POST /retrieve {"query", "collection_name", "limit": 10}``.

* **Overhead**: one client, every query answered in process and over HTTP, best of --rounds per
  query, one whole pass over the queries per variant and round, the variants alternating from
  one round to the next (not from one query to the next: then each process's model run
  evicts the other's caches, which no real client or service meets on every request). The
  overhead is the median over queries of (HTTP - in process): everything the service adds to
  a search (the HTTP round trip on loopback, validation, calibration, floor, packing, JSON).
  "Beyond the search step" is (HTTP - the search step's time in the same answer's
  ``Server-Timing`` header): the same, measured without comparing two processes (the tree's
  own work can run at another speed in the server's process, which the first figure counts
  as overhead). The search step is the tree's ``retrieve()`` plus the calibration of its
  ``limit`` chunks.
* **Throughput**: 1 and 8 concurrent clients (threads, each with its own connection) against
  the in-process tree called from 1 and 8 threads; requests/s over the whole run, and p50/p99
  of the single requests. The two variants alternate per pass.

Run under nice on the shared machine (its other users move every absolute figure; the
ratios are the result):

    nice -n 10 .venv/bin/python bench/bench_service.py --cache-dir .dashrag-work/cache [--json OUT]

Embedding SciFact takes minutes the first time (far longer while the machine is shared);
--cache-dir keeps the vectors, the built trees stay under --work (reused by later runs), and
--docs N builds both trees on the first N documents only.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import math
import os
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import dashrag
from dashrag.cli.config_files import resolve_config
from dashrag.evaluation.beir import load_split
from dashrag.service.blas import limit_blas_threads
from dashrag.service.settings import ServiceSettings

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
TREES = {"scifact_keyword": "keyword", "scifact_dense": "semantic_onnx"}
LIMIT = 10


def corpus_of(work: Path, docs: int | None) -> Path:
    """SciFact, or its first ``docs`` documents written as a corpus.jsonl (the same every run)."""
    if docs is None:
        return SCIFACT
    path = work / f"scifact-{docs}.jsonl"
    if not path.is_file():
        work.mkdir(parents=True, exist_ok=True)
        with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as source:
            path.write_text("".join(line for _, line in zip(range(docs), source)), encoding="utf-8")
    return path


def ensure_trees(work: Path, cache_dir: Path | None, docs: int | None) -> Path:
    trees = work / f"trees-{docs or 'all'}"
    for name, preset in TREES.items():
        if not (trees / name / "dashrag.json").is_file():
            print(f"building {name} ({preset}) on SciFact ({docs or 'all'} documents) ...", flush=True)
            tree = dashrag.build(resolve_config(preset), corpus_of(work, docs), work / f"build-{name}-{docs or 'all'}",
                                 chunker={"component": "WholeDocumentChunker", "params": {}}, cache_dir=cache_dir)
            tree.save(trees / name)
    return trees


class Service:
    """``dashrag serve --trees DIR --port 0`` in a subprocess; its JSON logs go to a file."""

    def __init__(self, trees: Path, log: Path):
        self.log = log
        env = {**os.environ, "RAG_PORT": "0", "RAG_LOG_LEVEL": "INFO"}
        self.handle = open(log, "w")
        self.process = subprocess.Popen([sys.executable, "-m", "dashrag.cli.main", "serve", "--trees", str(trees)],
                                        env=env, stderr=self.handle, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        self.port = 0
        while not self.port:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"the service did not start; see {log}")
            match = re.search(r"running on http://127\.0\.0\.1:(\d+)", log.read_text())
            self.port = int(match.group(1)) if match else 0
            time.sleep(0.1)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.handle.close()


def post_retrieve(connection: http.client.HTTPConnection, collection: str, query: str,
                  trace: bool = False) -> tuple[bytes, http.client.HTTPResponse]:
    """One ``POST /retrieve`` on a keep-alive connection: the body, read whole, and the response (a 200)."""
    body = json.dumps({"query": query, "collection_name": collection, "limit": LIMIT, "trace": trace})
    connection.request("POST", "/retrieve", body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    raw = response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}")
    return raw, response


def http_caller(port: int, collection: str) -> Callable[[str], float]:
    """POST /retrieve on one keep-alive connection; each call answers the search step's ms (Server-Timing)."""
    connection = http.client.HTTPConnection("127.0.0.1", port)

    def call(query: str) -> float:
        _, response = post_retrieve(connection, collection, query)
        return search_ms(response.getheader("Server-Timing", ""))

    return call


def search_ms(server_timing: str) -> float:
    """The ``search;dur=`` metric of a Server-Timing header."""
    return next(float(m.split(";dur=")[1]) for m in server_timing.split(", ") if m.startswith("search;"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def overhead(port: int, name: str, tree: Any, queries: list[str], rounds: int) -> dict[str, float]:
    """:func:`timed_overhead` from a worker thread: the ONNX MiniLM answered a query in 35 ms from this
    process's main thread and in 8 ms from a worker thread here (as torch did, see bench_parallel.py), and the
    server runs every request in a worker thread, so the peer does too."""
    with ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(timed_overhead, port, name, tree, queries, rounds).result()


def timed_overhead(port: int, name: str, tree: Any, queries: list[str], rounds: int) -> dict[str, float]:
    """Per query, best of ``rounds``: in process, over HTTP, and over HTTP less the search step's time that
    the same answer's Server-Timing header gives (the overhead without the tree's speed in another process).
    Each pass opens its own connection (the server closes one left idle for 5 s) and starts with one
    unmeasured query."""
    makers = {"in_process": lambda: (lambda q: tree.retrieve(q, top_k=LIMIT)),
              "service": lambda: http_caller(port, name)}
    best = {v: [math.inf] * len(queries) for v in makers}
    beyond_search = [math.inf] * len(queries)
    for round_ in range(rounds):
        for variant in list(makers) if round_ % 2 == 0 else list(reversed(makers)):
            call = makers[variant]()
            call(queries[0])
            for i, query in enumerate(queries):
                start = time.perf_counter()
                answer = call(query)
                elapsed = (time.perf_counter() - start) * 1000
                best[variant][i] = min(best[variant][i], elapsed)
                if variant == "service":
                    beyond_search[i] = min(beyond_search[i], elapsed - answer)
    differences = [s - p for s, p in zip(best["service"], best["in_process"])]
    return {"in_process_p50_ms": statistics.median(best["in_process"]),
            "service_p50_ms": statistics.median(best["service"]),
            "overhead_p50_ms": statistics.median(differences),
            "overhead_beyond_search_p50_ms": statistics.median(beyond_search)}


def load_run(make_caller: Callable[[], Callable[[str], Any]], queries: list[str], clients: int) -> dict[str, float]:
    """``clients`` threads share the queries (each its own caller); requests/s and latency percentiles."""
    work: queue.Queue[str] = queue.Queue()
    for query in queries:
        work.put(query)
    latencies: list[float] = []
    lock = threading.Lock()

    def client() -> None:
        call, mine = make_caller(), []
        while True:
            try:
                query = work.get_nowait()
            except queue.Empty:
                break
            start = time.perf_counter()
            call(query)
            mine.append((time.perf_counter() - start) * 1000)
        with lock:
            latencies.extend(mine)

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(client) for _ in range(clients)]:
            future.result()
    wall = time.perf_counter() - start
    return {"requests_per_s": len(latencies) / wall, "p50_ms": percentile(latencies, 0.5),
            "p99_ms": percentile(latencies, 0.99)}


def throughput(port: int, name: str, tree: Any, queries: list[str], clients: int, passes: int) -> dict[str, Any]:
    makers = {"in_process": lambda: (lambda q: tree.retrieve(q, top_k=LIMIT)),
              "service": lambda: http_caller(port, name)}
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in makers}
    for pass_ in range(passes):
        for variant in (list(makers) if pass_ % 2 == 0 else list(reversed(makers))):
            runs[variant].append(load_run(makers[variant], queries, clients))
    best = {v: max(r, key=lambda x: x["requests_per_s"]) for v, r in runs.items()}
    return {**best, "rps_ratio": best["service"]["requests_per_s"] / best["in_process"]["requests_per_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=REPO / ".dashrag-work" / "bench_service")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--docs", type=int, default=None, help="Only the first N SciFact documents (default: all).")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    queries = [q for _, q in load_split(SCIFACT, "test").queries.items()][: args.queries]
    trees = ensure_trees(args.work, args.cache_dir, args.docs)
    service = Service(trees, args.work / "server.log")
    limit_blas_threads(ServiceSettings().blas_threads)  # the in-process tree runs as the server's does
    report: dict[str, Any] = {"queries": len(queries), "limit": LIMIT, "documents": args.docs or 5183}
    try:
        for name, preset in TREES.items():
            tree = dashrag.load(trees / name)
            tree.retrieve(queries[0])  # warm both sides (model sessions, first connection)
            http_caller(service.port, name)(queries[0])
            cost = overhead(service.port, name, tree, queries, args.rounds)
            entry: dict[str, Any] = {"preset": preset, "overhead": cost}
            for clients in (1, 8):
                entry[f"clients_{clients}"] = throughput(service.port, name, tree, queries, clients, args.passes)
            report[name] = entry
            print(json.dumps({name: entry}, indent=1), flush=True)
    finally:
        service.close()
    print_table(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


def print_table(report: dict[str, Any]) -> None:
    print("\n| tree | clients | service req/s | p50 ms | p99 ms | in-process req/s | p50 ms | p99 ms | req/s ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in TREES:
        for clients in (1, 8):
            run = report[name][f"clients_{clients}"]
            s, p = run["service"], run["in_process"]
            print(f"| {report[name]['preset']} | {clients} | {s['requests_per_s']:,.0f} | {s['p50_ms']:.2f} | "
                  f"{s['p99_ms']:.2f} | {p['requests_per_s']:,.0f} | {p['p50_ms']:.2f} | {p['p99_ms']:.2f} | "
                  f"{run['rps_ratio']:.2f} |")
    print("\n| tree | in-process p50 ms | service p50 ms | overhead p50 ms (goal <= 2) | beyond the search step |")
    print("| --- | --- | --- | --- | --- |")
    for name in TREES:
        o = report[name]["overhead"]
        print(f"| {report[name]['preset']} | {o['in_process_p50_ms']:.2f} | {o['service_p50_ms']:.2f} | "
              f"{o['overhead_p50_ms']:.2f} | {o['overhead_beyond_search_p50_ms']:.2f} |")


if __name__ == "__main__":
    main()
