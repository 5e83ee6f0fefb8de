"""What one training step of ``finetune pipeline --corpus`` costs, by recipe: sequence length, mined negative or not.

The time budget buys steps, so a step's cost decides how much a run learns. This times the loss's
forward and backward on real SciFact pseudo-query batches (``pseudo_queries`` over the corpus, a
seeded sample of every source), exactly as the budget's probe does (``step_probe.time_steps``: a
warm-up on a quarter batch, then full batches), for each recipe:

  triples-256   (query, its document, one other document): the pipeline's recipe (the negative is a
                seeded other SciFact abstract, of the mined negatives' length distribution)
  pairs-256     (query, its document): in-batch negatives only, a third fewer sequences per step
  triples-128 / pairs-128  the same at 128 tokens (queries are short; abstracts are cut)

It measures cost only: whether a cheaper recipe learns as well is a 30-minute run's question.

``--fusion`` measures instead what the planner's ``pipeline.FUSE_S`` stands for: the tuner's cost per
grid point and dev query once its children's answers are remembered (``tuner.SubtreeCache``): a
two-child ``ParallelRetriever`` (BM25 at two ``k1``: no model, the same fusion as the hybrid's) tuned over
the pipeline's fusion weights on the ``--corpus`` dev slice of SciFact's pseudo-queries. Run under the
team's lock, one at a time:

    PYTHONPATH=. nice .venv/bin/python bench/bench_finetune_step_cost.py [--steps 2]
    PYTHONPATH=. nice .venv/bin/python bench/bench_finetune_step_cost.py --fusion
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
RECIPES = {"triples-256": (256, True), "pairs-256": (256, False), "triples-128": (128, True),
           "pairs-128": (128, False)}


def columns(batch_size: int, steps: int, seed: int) -> dict[str, list[str]]:
    """(anchor, positive, negative) rows of SciFact pseudo-queries: a seeded sample over every source."""
    import dashrag
    from dashrag.finetuning.pairs import document_texts
    from dashrag.finetuning.pseudo_queries import pseudo_queries

    corpus = dashrag.Corpus.from_beir(SCIFACT)
    texts = list(document_texts(corpus).values())
    rng = random.Random(seed)
    made = pseudo_queries(rng.sample(corpus.documents, (steps + 1) * batch_size), seed=seed)
    rng.shuffle(made)
    rows = made[:(steps + 1) * batch_size]
    return {"anchor": [q.query for q in rows], "positive": [q.positive for q in rows],
            "negative": [rng.choice(texts) for _ in rows]}


def time_recipe(data: dict[str, list[str]], max_seq_length: int, negative: bool, batch_size: int,
                steps: int) -> list[float]:
    import torch
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from dashrag.finetuning.base_model import resolve_embedding_base
    from dashrag.finetuning.embedding_trainer import load_base

    model = load_base(resolve_embedding_base("MiniLMEmbedding"), max_seq_length, "cpu")
    loss = MultipleNegativesRankingLoss(model)
    names = ("anchor", "positive", "negative") if negative else ("anchor", "positive")

    def one_step(start: int, size: int) -> float:
        began = time.perf_counter()
        features = [model.preprocess(data[name][start:start + size]) for name in names]
        loss(features, torch.empty(0)).backward()
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - began

    model.train()
    one_step(0, max(2, batch_size // 4))
    return [one_step((step + 1) * batch_size, batch_size) for step in range(steps)]


def fusion_cost(seed: int) -> dict[str, float]:
    """Seconds per (grid point, dev query) of the tuner once both children's answers are remembered."""
    import tempfile

    import dashrag
    from dashrag.api import prepare_corpus
    from dashrag.evaluation.tuner import parse_param, tune
    from dashrag.finetuning.corpus_data import HELD_OUT_FRACTION, slices_of
    from dashrag.finetuning.negatives import WHOLE_DOCUMENTS
    from dashrag.finetuning.pipeline import BM25_WEIGHTS
    from dashrag.finetuning.pseudo_queries import pseudo_queries, pseudo_split

    corpus = dashrag.Corpus.from_beir(SCIFACT)
    _, slices = slices_of(pseudo_split(pseudo_queries(corpus.documents, seed=seed), dataset="scifact"),
                          HELD_OUT_FRACTION, 0.1, seed)
    dev = slices.dev
    assert dev is not None
    config = {"component": "ParallelRetriever", "params": {
        "children": [{"component": "BM25Retriever", "params": {"top_k": 100, "k1": 0.9}},
                     {"component": "BM25Retriever", "params": {"top_k": 100, "k1": 1.5}}],
        "merge_strategy": "relative_score", "weights": [0.5, 1.0]}}
    weights = parse_param("params.weights[0]=" + ",".join(str(w) for w in BM25_WEIGHTS))
    with tempfile.TemporaryDirectory() as work:
        infra = prepare_corpus(corpus, work, WHOLE_DOCUMENTS)
        result = tune(config, [weights], infra=infra, train=dev, test=None)
    first, rest = result.points[0].seconds, [p.seconds for p in result.points[1:]]
    return {"dev_queries": len(dev), "points": len(result.points), "first_point_s": round(first, 2),
            "per_point_s": round(statistics.median(rest), 3),
            "fuse_s_per_point_and_query": round(statistics.median(rest) / len(dev), 6)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--recipes", default=",".join(RECIPES))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--fusion", action="store_true", help="the tuner's cost per point and query instead")
    args = parser.parse_args()
    if args.fusion:
        figures = fusion_cost(args.seed)
        print(json.dumps(figures))
        if args.json is not None:
            args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
        return
    data = columns(args.batch_size, args.steps, args.seed)
    medians: dict[str, float] = {}
    results: dict[str, dict[str, object]] = {}
    for name in args.recipes.split(","):
        max_seq_length, negative = RECIPES[name]
        seconds = time_recipe(data, max_seq_length, negative, args.batch_size, args.steps)
        medians[name] = round(statistics.median(seconds), 3)
        results[name] = {"median_s_per_step": medians[name], "steps_s": [round(s, 3) for s in seconds]}
        print(f"{name:12} {medians[name]:7.2f} s/step  {results[name]['steps_s']}", flush=True)
    if "triples-256" in medians:
        for name, median in medians.items():
            print(f"{name:12} x{medians['triples-256'] / median:.2f} steps per second of triples-256")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
