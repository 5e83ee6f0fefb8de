"""ParallelRetriever runs its children concurrently: its time against each child's and their sum.

Builds the `hybrid` preset (BM25 + dense MiniLM, round robin; --preset for another) on SciFact, then answers the
300 test queries one at a time with BM25 alone, dense alone, and the parallel
tree, in one process, each pass repeated and the best kept. The parallel tree
should take less than BM25 + dense (the children overlap in threads), and not
much more than its slower child. Run:

    .venv/bin/python bench/bench_parallel.py [--cache-dir DIR] [--json OUT]

Embedding the corpus takes minutes the first time; --cache-dir keeps the vectors.
Every variant is timed from a worker thread (see best_time).
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dashrag
from dashrag.cli.config_files import resolve_config
from dashrag.evaluation.beir import load_split

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def best_time(fn, repeats: int) -> float:
    """Best wall time of ``fn``, run in a worker thread: the parallel tree's children run in
    worker threads, and torch's CPU kernels run measurably slower from the main thread here,
    so every variant is timed from a worker thread alike."""
    def timed() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    with ThreadPoolExecutor(max_workers=1) as worker:
        return min(worker.submit(timed).result() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/dashrag-bench-cache"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--preset", default="hybrid", help="a Parallel preset of BM25 + dense")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    queries = list(load_split(args.data, "test").queries.values())
    config = resolve_config(args.preset)
    tree = dashrag.build(config, dashrag.Corpus.from_beir(args.data), args.cache_dir / "work",
                         chunker={"component": "WholeDocumentChunker"}, cache_dir=args.cache_dir)
    bm25, dense = tree.get_children()
    for q in queries[:5]:  # warm up the model and the code paths
        tree.retrieve(q)

    def one_at_a_time(retriever):
        return lambda: [retriever.retrieve(q) for q in queries]

    timings = {name: best_time(one_at_a_time(r), args.repeats) for name, r in
               (("bm25", bm25), ("dense", dense), ("parallel", tree))}
    tree.params = tree.params.model_copy(update={"concurrent": False})
    timings["parallel_sequential_threads_off"] = best_time(one_at_a_time(tree), args.repeats)
    n = len(queries)
    figures = {
        "queries": n,
        "ms_per_query": {k: round(v / n * 1000, 3) for k, v in timings.items()},
        "sum_of_children_ms": round((timings["bm25"] + timings["dense"]) / n * 1000, 3),
        "parallel_over_sum": round(timings["parallel"] / (timings["bm25"] + timings["dense"]), 3),
        "parallel_over_slower_child": round(timings["parallel"] / max(timings["bm25"], timings["dense"]), 3),
    }
    print(f"{'':32}{'ms/query':>10}")
    for name, ms in figures["ms_per_query"].items():
        print(f"{name:32}{ms:>10.2f}")
    print(f"{'bm25 + dense (sum)':32}{figures['sum_of_children_ms']:>10.2f}")
    print(f"parallel / sum of children: {figures['parallel_over_sum']:.2f}; "
          f"parallel / slower child: {figures['parallel_over_slower_child']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
