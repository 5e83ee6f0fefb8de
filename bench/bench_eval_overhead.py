"""How much of a `dashrag eval` run is evaluation's own work, rather than the retrievers'.

A full SciFact test run of the ``keyword`` preset (``components/keyword.json``;
a TF-IDF tree where that preset does not exist), in the steps `dashrag eval`
takes, each timed on its own:

  build_s      read the corpus, chunk, store, fit the tree       (retrievers' work)
  retrieval_s  the 300 test queries through retrieve_batch,       (retrievers' work)
               batched, with full traces
  eval_s       evaluation's own work: pooling every node's output  (the overhead)
               to documents, every metric of every node
               (pytrec_eval), the JSON report, its table rendered
               and the report serialised
  pool_s       the pooling part of eval_s alone

Figures printed (and written with --json):

  overhead_pct_of_run      eval_s / (build_s + retrieval_s + eval_s): the share
                           of a whole `dashrag eval CONFIG` run. Target: < 5%.
  overhead_pct_of_queries  eval_s / (retrieval_s + eval_s): the share once the
                           tree is built (a saved tree, or a tuning point).
                           The stricter figure; shown, not hidden.

Clock: CPU seconds of this process (``time.process_time``) by default, so the
figures do not inflate on a shared machine (the keyword tree is single-threaded);
``--clock wall`` uses ``time.perf_counter``. Retrieval and evaluation are
repeated --repeats times and the median is taken; the build runs once.

Run: .venv/bin/python bench/bench_eval_overhead.py [--json OUT] [--repeats 5] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

import dashrag
from dashrag.core.config_json import read_config_file
from dashrag.evaluation.beir import load_split
from dashrag.evaluation.metrics import Evaluator
from dashrag.evaluation.per_node import collect_node_runs
from dashrag.evaluation.report import build_report, per_node_table
from dashrag.evaluation.runner import DEFAULT_TOP_K, run_queries, score_run
from dashrag.presets import PRESETS_DIR

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
METRICS = "ndcg@10,recall@100,mrr@10"
TFIDF_FALLBACK = {"component": "TFIDFRetriever", "params": {"top_k": 10}}
TARGET_PCT = 5.0


def tree_config() -> tuple[str, dict]:
    preset = PRESETS_DIR / "keyword.json"
    if preset.is_file():
        return "keyword preset", read_config_file(preset, "preset")
    return "TF-IDF (no keyword preset yet)", TFIDF_FALLBACK


def evaluation_work(run, split, evaluator) -> dict:
    """Everything `dashrag eval` does after retrieval: score every node, build, render and write the report."""
    scored = score_run(run, evaluator, per_node=True)
    report = build_report(dataset=split.dataset, split=split.split, result=scored.result, per_node=scored.per_node,
                          retrieval_s=run.retrieval_s, eval_s=scored.eval_s)
    Console(file=io.StringIO(), width=200).print(per_node_table(report))
    json.dumps(report)
    return report


def measure(dataset: Path, repeats: int, clock) -> dict:
    name, config = tree_config()
    split = load_split(dataset, "test")
    with tempfile.TemporaryDirectory() as workdir:
        began = clock()
        tree = dashrag.build(config, dashrag.Corpus.from_beir(dataset), workdir)
        build_s = clock() - began
        evaluator = Evaluator(split.qrels, METRICS)
        retrieval, evaluation, pooling = [], [], []
        for _ in range(repeats):
            began = clock()
            run = run_queries(tree, split.queries, top_k=DEFAULT_TOP_K)
            retrieval.append(clock() - began)
            began = clock()
            report = evaluation_work(run, split, evaluator)
            evaluation.append(clock() - began)
            began = clock()
            collect_node_runs(run.traces)
            pooling.append(clock() - began)
        tree.close()
    retrieval_s, eval_s = statistics.median(retrieval), statistics.median(evaluation)
    return {
        "tree": name,
        "config": config,
        "dataset": split.dataset,
        "split": split.split,
        "n_queries": len(split),
        "top_k": DEFAULT_TOP_K,
        "metrics": report["metrics"],
        "build_s": build_s,
        "retrieval_s": retrieval_s,
        "eval_s": eval_s,
        "pool_s": statistics.median(pooling),
        "overhead_pct_of_run": 100 * eval_s / (build_s + retrieval_s + eval_s),
        "overhead_pct_of_queries": 100 * eval_s / (retrieval_s + eval_s),
        "target_pct": TARGET_PCT,
        "repeats": repeats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    figures = {**measure(args.dataset, args.repeats, clock), "clock": args.clock}
    print(f"{figures['tree']} on {figures['dataset']} {figures['split']} ({figures['n_queries']} queries, "
          f"top_k {figures['top_k']}, {args.clock} seconds, median of {args.repeats})")
    print("  " + "  ".join(f"{k} {v:.4f}" for k, v in figures["metrics"].items()))
    for key in ("build_s", "retrieval_s", "eval_s", "pool_s"):
        print(f"  {key:<12} {figures[key]:8.3f}")
    verdict = "under" if figures["overhead_pct_of_run"] < TARGET_PCT else "OVER"
    print(
        f"  overhead {figures['overhead_pct_of_run']:.2f}% of the whole run ({verdict} the {TARGET_PCT:.0f}% target); "
        f"{figures['overhead_pct_of_queries']:.2f}% of the query phase alone"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
