"""The rerank cascade's early exit: quality and time per query at several thresholds, with a plot.

The cascade (RerankCascadeRetriever) asks a cheap stage for candidates and skips the expensive
stage when the cheap stage's top score clears ``exit_threshold``. This bench measures that trade
on SciFact test (300 queries, each document whole) with:

* **fast**: the BM25 child of a tuned preset (by default the fine-tuned hybrid written by
  ``dashrag finetune pipeline``, components/scifact_finetuned.json), its top ``--candidates``;
* **precise**: the whole tuned hybrid (BM25 + the fine-tuned dense model, min-max fusion)
  re-scoring those candidates through ``score_chunks``. No real cross-encoder ships, and one
  trained from MiniLM's weights on SciFact's 900 judgements ranks below BM25 (issue 17,
  docs/finetuning.md), so the best precise stage available is the fine-tuned hybrid: its cost is
  the dense model's query embedding, which an early exit saves.

Thresholds are quantiles of BM25's top score over the *train* queries (so the exit rates are
chosen without looking at test), plus never-exit and always-exit (threshold 0: every BM25 hit
scores above it). Timing is interleaved: each query is answered by every variant in turn (order
rotating), ``--rounds`` times, and a variant's time for a query is its fastest round. Ratios are
against never-exit. Run (after the pipeline wrote the preset and its model):

    .venv/bin/python bench/bench_cascade_early_exit.py [--preset components/scifact_finetuned.json]
        [--rounds 3] [--json OUT] [--plot docs/img/cascade_early_exit.png]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import dashrag
from dashrag.api import prepare_corpus
from dashrag.cli.config_files import resolve_config
from dashrag.core.factory import build_component
from dashrag.evaluation.beir import load_split
from dashrag.evaluation.metrics import Evaluator

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
WHOLE = {"component": "WholeDocumentChunker", "params": {}}
QUANTILES = (0.25, 0.5, 0.75, 0.9)


def cascade(preset: dict[str, Any], candidates: int, mode: str, threshold: float | None) -> dict[str, Any]:
    bm25 = json.loads(json.dumps(preset["params"]["children"][0]))
    bm25["params"]["top_k"] = candidates
    params: dict[str, Any] = {"fast": bm25, "precise": preset, "stage1_top_n": candidates, "top_k": 10,
                              "early_exit": mode}
    if threshold is not None:
        params["exit_threshold"] = threshold
    return {"component": "RerankCascadeRetriever", "params": params}


def fitted(config: dict[str, Any], infra: Any) -> Any:
    tree = build_component(config, "retriever")
    tree.inject_infra(infra)
    tree.init_model()
    return tree


def top_scores(tree: Any, queries: dict[str, str]) -> np.ndarray:
    return np.array([(answer[0].score if answer else 0.0) for answer in
                     (tree.retrieve(q)[0] for q in queries.values())])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="components/scifact_finetuned.json")
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--workdir", type=Path, default=Path(".dashrag-work") / "scifact")
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()

    preset = dashrag.validate_and_transform(resolve_config(args.preset), "retriever")
    infra = prepare_corpus(dashrag.Corpus.from_beir(args.dataset), args.workdir, WHOLE)
    train, test = load_split(args.dataset, "train"), load_split(args.dataset, "test")
    bm25 = fitted(cascade(preset, args.candidates, "never", None)["params"]["fast"], infra)
    train_tops = top_scores(bm25, dict(train.queries))
    thresholds = {f"exit above train q{int(q * 100)}": float(np.quantile(train_tops, q)) for q in QUANTILES}
    variants: dict[str, dict[str, Any]] = {"never exit": cascade(preset, args.candidates, "never", None)}
    variants.update({name: cascade(preset, args.candidates, "threshold", t) for name, t in thresholds.items()})
    variants["always exit"] = cascade(preset, args.candidates, "threshold", 0.0)
    trees = {name: fitted(config, infra) for name, config in variants.items()}
    ids = list(test.queries)
    for tree in trees.values():  # warm: models loaded, first-call costs paid
        tree.retrieve(test.queries[ids[0]])
    best = {name: np.full(len(ids), np.inf) for name in trees}
    runs: dict[str, dict[str, dict[str, float]]] = {name: {} for name in trees}
    exits = {name: 0 for name in trees}
    names = list(trees)
    for round_index in range(args.rounds):
        for i, query_id in enumerate(ids):
            shift = (i + round_index) % len(names)
            for name in names[shift:] + names[:shift]:
                began = time.perf_counter()
                chunks, trace = trees[name].retrieve(test.queries[query_id])
                best[name][i] = min(best[name][i], time.perf_counter() - began)
                if round_index == 0:
                    runs[name][query_id] = {c.document_id: float(c.score) for c in chunks}
                    exits[name] += trace["selection"]["path"] == "early_exit"
    evaluator = Evaluator(test.qrels, "ndcg@10")
    never_ms = best["never exit"].mean() * 1000
    rows = []
    for name in names:
        ms = best[name].mean() * 1000
        rows.append({"variant": name, "threshold": thresholds.get(name, 0.0 if name == "always exit" else None),
                     "exit_rate": exits[name] / len(ids), "ndcg@10": evaluator.evaluate(runs[name]).mean["ndcg@10"],
                     "ms_per_query": ms, "time_vs_never": ms / never_ms})
    print(f"{'variant':<22}{'threshold':>10}{'exit rate':>10}{'nDCG@10':>9}{'ms/query':>10}{'vs never':>9}")
    for row in rows:
        threshold = "" if row["threshold"] is None else f"{row['threshold']:.2f}"
        print(f"{row['variant']:<22}{threshold:>10}{row['exit_rate']:>10.0%}{row['ndcg@10']:>9.4f}"
              f"{row['ms_per_query']:>10.2f}{row['time_vs_never']:>9.2f}")
    report = {"preset": args.preset, "candidates": args.candidates, "rounds": args.rounds, "queries": len(ids),
              "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.plot:
        plot(rows, args.plot)
    for tree in trees.values():
        tree.close()
    bm25.close()


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    rows = sorted(rows, key=lambda r: r["ms_per_query"])
    xs, ys = [r["ms_per_query"] for r in rows], [r["ndcg@10"] for r in rows]
    axes.plot(xs, ys, marker="o")
    for i, (row, x, y) in enumerate(zip(rows, xs, ys)):
        axes.annotate(f"{row['variant']} ({row['exit_rate']:.0%} exit)", (x, y), fontsize=7,
                      textcoords="offset points", xytext=(-8, 8) if i % 2 else (6, -12),
                      ha="right" if i % 2 else "left")
    axes.set_xlabel("ms per query (fastest of the rounds, mean over SciFact test)")
    axes.set_ylabel("nDCG@10 (SciFact test)")
    axes.set_title("Rerank cascade: BM25 → fine-tuned hybrid, early exit by BM25 top score")
    figure.savefig(path, format="png", dpi=110)


if __name__ == "__main__":
    main()
