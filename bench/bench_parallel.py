"""ParallelRetriever runs its children concurrently: its time against each child's and their sum.

Builds three two-child Parallel trees on SciFact: the presets `hybrid_onnx` (BM25 +
MiniLM as int8 ONNX on onnxruntime) and `hybrid` (BM25 + MiniLM on torch), and
`two_dense_onnx` (two dense children of equal cost over the ONNX MiniLM). It answers the
300 test queries one at a time and in batches of 50 (--batch), with each child alone,
the parallel tree, and the same children one after the other (threads off).

What decides the outcome: a child overlaps its sibling only while it runs without the
GIL, and overlapping must save more than it costs (the hand-off to a thread, and the cores
slowing each other); the measured figures, and why BM25 beside a dense child does not gain
on a 2-vCPU machine, are in README.md ("Benchmarks") and docs/architecture.md. Two dense
children of equal cost do overlap, once BLAS is held to one thread (--blas-threads 1):
OpenBLAS otherwise runs each child's query-by-corpus product on both cores and the two
products trample each other.

Timing is interleaved, because the run-to-run spread of this machine is larger than
BM25's whole time: each round answers every query (or batch) with every variant, the
variants' order rotating from one to the next, and a variant's time for a query is its
fastest over --rounds rounds (batches: over --rounds // 2 + 1). So a slow moment hits
all variants alike, and the figures are sums of per-item minima. Every variant runs
from one worker thread (see timing_thread). Run:

    .venv/bin/python bench/bench_parallel.py [--cache-dir DIR] [--rounds 5] [--json OUT]

Embedding the corpus takes minutes the first time (per model); --cache-dir keeps the vectors.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

import dashrag
from dashrag.cli.config_files import resolve_config
from dashrag.evaluation.beir import load_split

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


# Two children of similar cost that both run without the GIL: the same ONNX MiniLM vectors
# searched by cosine and by dot product (equal rankings; each child embeds the query itself).
ONNX_DENSE: dict[str, Any] = {"component": "DenseEmbeddingRetriever", "params": {
    "top_k": 10, "embedding": {"component": "MiniLMOnnxEmbedding", "params": {}}}}
TWO_DENSE_ONNX = {"component": "ParallelRetriever", "params": {"merge_strategy": "rrf", "children": [
    {**ONNX_DENSE, "params": {**ONNX_DENSE["params"], "similarity_metric": "cosine"}},
    {**ONNX_DENSE, "params": {**ONNX_DENSE["params"], "similarity_metric": "dot"}}]}}


def describe(child) -> str:
    embedding = child.nested.get("embedding")
    return child.component_name + (f"[{embedding.component_name}]" if embedding is not None else "")


def interleaved_best_ms(variants: dict[str, Callable[[Any], Any]], queries: Sequence[Any],
                        rounds: int) -> dict[str, list[float]]:
    """Per variant, per query: the fastest of ``rounds`` answers, in ms (order rotated per query)."""
    names = list(variants)
    best = {name: [math.inf] * len(queries) for name in names}
    for round_ in range(rounds):
        for i, query in enumerate(queries):
            shift = (i + round_) % len(names)
            for name in names[shift:] + names[:shift]:
                start = time.perf_counter()
                variants[name](query)
                best[name][i] = min(best[name][i], (time.perf_counter() - start) * 1000)
    return best


def timing_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a worker thread: the parallel tree's children run in threads, and torch's
    CPU kernels ran measurably slower from the main thread here, so every variant is timed
    from a worker thread alike (the parallel tree runs its last child in the calling thread)."""
    with ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(fn).result()


def summarise(best: dict[str, list[float]], n_queries: int) -> dict[str, Any]:
    """ms per query of each variant (sums of per-item minima), the sum of the children, the ratios."""
    ms = {variant: sum(times) / n_queries for variant, times in best.items()}
    both = [a + b for a, b in zip(best["child 0"], best["child 1"])]
    return {
        "ms_per_query": {k: round(v, 3) for k, v in ms.items()},
        "sum_of_children_ms": round(sum(both) / n_queries, 3),
        "parallel_over_sum": round(ms["parallel"] / (sum(both) / n_queries), 4),
        "parallel_over_slower_child": round(ms["parallel"] / max(ms["child 0"], ms["child 1"]), 4),
        "items_where_parallel_beats_sum": f"{sum(p < s for p, s in zip(best['parallel'], both))} of {len(both)}",
    }


def measure_preset(name: str, corpus, queries: list[str], cache_dir: Path, rounds: int, batch: int) -> dict[str, Any]:
    """The four variants of one BM25 + dense Parallel preset, one query at a time and in batches."""
    config = TWO_DENSE_ONNX if name == "two_dense_onnx" else resolve_config(name)
    tree = dashrag.build(config, corpus, cache_dir / "work", chunker={"component": "WholeDocumentChunker"},
                         cache_dir=cache_dir)
    first, second = tree.get_children()
    # the same children under a second root that runs them one after the other
    serial = type(tree)(tree.params.model_copy(update={"concurrent": False}), nested=tree.nested)

    def variants(method: str) -> dict[str, Callable]:
        return {"child 0": getattr(first, method), "child 1": getattr(second, method),
                "parallel": getattr(tree, method), "parallel, threads off": getattr(serial, method)}

    blocks = [queries[i:i + batch] for i in range(0, len(queries), batch)]

    def measure() -> tuple[dict, dict]:
        interleaved_best_ms(variants("retrieve"), queries[:10], 1)  # warm up the model, the pool, the code paths
        single = interleaved_best_ms(variants("retrieve"), queries, rounds)
        interleaved_best_ms(variants("retrieve_batch"), blocks[:1], 1)
        batched = interleaved_best_ms(variants("retrieve_batch"), blocks, max(1, rounds // 2 + 1))
        return single, batched

    single, batched = timing_thread(measure)
    tree.close()
    children = " + ".join(describe(child) for child in (first, second))
    return {"preset": name, "children": children, "queries": len(queries),
            "rounds": rounds, "batch": batch, "one_at_a_time": summarise(single, len(queries)),
            "batched": summarise(batched, len(queries))}


def print_figures(figures: dict[str, Any]) -> None:
    for mode in ("one_at_a_time", "batched"):
        f = figures[mode]
        how = "one query at a time" if mode == "one_at_a_time" else f"batches of {figures['batch']}"
        print(f"\n{figures['preset']} ({figures['children']}), {how}")
        print(f"{'':32}{'ms/query':>10}")
        for name, value in f["ms_per_query"].items():
            print(f"{name:32}{value:>10.3f}")
        print(f"{'child 0 + child 1 (sum)':32}{f['sum_of_children_ms']:>10.3f}")
        print(f"parallel / sum of children: {f['parallel_over_sum']:.3f}; "
              f"parallel / slower child: {f['parallel_over_slower_child']:.3f}; "
              f"parallel faster than the sum on {f['items_where_parallel_beats_sum']} "
              f"{'queries' if mode == 'one_at_a_time' else 'batches'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/dashrag-bench-cache"))
    parser.add_argument("--rounds", type=int, default=5, help="answers per query and variant; the fastest counts")
    parser.add_argument("--batch", type=int, default=50, help="queries per retrieve_batch call in the batched pass")
    parser.add_argument("--presets", default="hybrid_onnx,hybrid,two_dense_onnx",
                        help="two-child Parallel presets, comma-separated (two_dense_onnx: see TWO_DENSE_ONNX)")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="limit BLAS (OpenBLAS) to this many threads for the whole run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    corpus = dashrag.Corpus.from_beir(args.data)
    queries = list(load_split(args.data, "test").queries.values())
    results = []
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.blas_threads, user_api="blas")
    for name in args.presets.split(","):
        results.append(measure_preset(name.strip(), corpus, queries, args.cache_dir, args.rounds, args.batch))
        print_figures(results[-1])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
