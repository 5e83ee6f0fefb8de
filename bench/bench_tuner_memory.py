"""Peak memory of the tuner against the size of its grid, on the ``finetune pipeline --corpus`` dev slice of SciFact.

The first ``--corpus`` SciFact run was killed for memory at 24.2 GB while tuning (docs/finetuning.md, "Measurements"):
the tuner remembered every fitted node's answers to the 1,398 dev pseudo-queries, each grid point's root included.
Now only answers a later point reuses are kept (``tuner.Reuse``), so the peak should not grow with the number of
points. This tunes the pipeline's grid shape (BM25 ``k1`` x ``b`` x the fusion weight, the weight innermost) over a
two-child ``ParallelRetriever`` (the BM25 leaf tuned, a second BM25 standing for the dense child, as in
``bench_finetune_step_cost.py --fusion``: no model, the same hits per answer and the same fusion) and prints the
process's peak resident memory. Run one grid size per process (the peak is the process's), under the team's lock:

    PYTHONPATH=. nice .venv/bin/python bench/bench_tuner_memory.py --k1 1 --b 1    # 7 points
    PYTHONPATH=. nice .venv/bin/python bench/bench_tuner_memory.py --k1 2 --b 2    # 28 points

Pointing ``PYTHONPATH`` at an older checkout (``git archive``) measures the tuner before the change the same way.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k1", type=int, default=2, help="how many of the pipeline's k1 values")
    parser.add_argument("--b", type=int, default=2, help="how many of the pipeline's b values")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    import dashrag
    from dashrag.api import prepare_corpus
    from dashrag.evaluation.tuner import parse_param, tune
    from dashrag.finetuning.corpus_data import HELD_OUT_FRACTION, slices_of
    from dashrag.finetuning.negatives import WHOLE_DOCUMENTS
    from dashrag.finetuning.pipeline import B_VALUES, BM25_WEIGHTS, K1_VALUES
    from dashrag.finetuning.pseudo_queries import pseudo_queries, pseudo_split

    corpus = dashrag.Corpus.from_beir(SCIFACT)
    _, slices = slices_of(pseudo_split(pseudo_queries(corpus.documents, seed=args.seed), dataset="scifact"),
                          HELD_OUT_FRACTION, 0.1, args.seed)
    dev = slices.dev
    assert dev is not None
    config = {"component": "ParallelRetriever", "params": {
        "children": [{"component": "BM25Retriever", "params": {"top_k": 100}},
                     {"component": "BM25Retriever", "params": {"top_k": 100, "k1": 1.5, "b": 0.3}}],
        "merge_strategy": "relative_score", "weights": [0.5, 1.0]}}

    def grid(path: str, values: tuple[float, ...]) -> object:
        return parse_param(f"{path}=" + ",".join(str(v) for v in values))

    params = [grid("params.children[0].params.k1", K1_VALUES[:args.k1]),
              grid("params.children[0].params.b", B_VALUES[:args.b]),
              grid("params.weights[0]", BM25_WEIGHTS)]
    with tempfile.TemporaryDirectory() as work:
        infra = prepare_corpus(corpus, work, WHOLE_DOCUMENTS)
        before = peak_rss_mb()
        began = time.perf_counter()
        result = tune(config, params, infra=infra, train=dev, test=None)  # type: ignore[arg-type]
        seconds = time.perf_counter() - began
    print(json.dumps({"dev_queries": len(dev), "points": len(result.points),
                      "peak_rss_mb_before_tuning": round(before), "peak_rss_mb": round(peak_rss_mb()),
                      "tune_s": round(seconds, 1), "best": result.best_point.values}))


if __name__ == "__main__":
    main()
