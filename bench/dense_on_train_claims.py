"""Does a model learned from the corpus alone gain on real queries? SciFact's *train* claims, never its test.

issue 41 asks the learned dense model to beat the base model on SciFact's claims with no judgement used by
the pipeline. Its held-out pseudo-queries cannot see that (they predicted a gain where the claims lost:
docs/finetuning.md, "Why the learned model loses on SciFact's claims"), so a training recipe is chosen on the
809 train claims (their qrels read here only, at development time; the ``--corpus`` pipeline reads none), and
the test claims are scored once, afterwards, for the recipe shipped (``dashrag eval``). This script never reads
the test split.

It scores over the whole corpus (each document whole), nDCG@10, from the embedding cache the pipeline filled
(``--cache``: its workdir; a model not cached there is embedded into it):

- the base model alone and the learned model alone (``--learned``: the pipeline's model folder);
- the first stage's BM25 alone, and the teacher the ``distill`` recipe learns from (the base model's cosine
  plus the lexical weight recorded in the learned model's card times BM25), for reference.

Run from the repository root after the pipeline:

    PYTHONPATH=. nice .venv/bin/python bench/dense_on_train_claims.py \
        --learned ./models/scifact_pseudo_distill-embedding
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from diagnose_pseudo_learning import load_model, whole_documents  # bench/, beside this script

from dashrag.core.validation import validate_and_transform
from dashrag.evaluation.beir import EvaluationSplit, load_split
from dashrag.evaluation.metrics import Evaluator
from dashrag.finetuning.base_model import resolve_embedding_base
from dashrag.finetuning.teacher import LexicalScorer
from dashrag.presets import load_preset

SPLIT = "train"  # never test: see the docstring


def ndcg_at_10(scores: np.ndarray, split: EvaluationSplit, query_ids: list[str], documents: list[str]) -> float:
    top = np.argsort(-scores, axis=1, kind="stable")[:, :100]
    run = {q: {documents[j]: float(scores[i, j]) for j in top[i]} for i, q in enumerate(query_ids)}
    return round(float(Evaluator(split.qrels, "ndcg@10").evaluate(run).mean["ndcg@10"]), 4)


def dense_scores(model: str, infra: Any, claims: list[str]) -> np.ndarray:
    dense = load_model(model, infra)
    try:
        return np.asarray(dense.embedding.embed_queries(claims)) @ dense.vectors.T
    finally:
        dense.embedding.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--cache", type=Path, default=Path(".dashrag-work/scifact"),
                        help="the pipeline's workdir: its embedding cache holds the corpus's vectors")
    parser.add_argument("--learned", required=True, help="the learned model folder")
    parser.add_argument("--store", type=Path, default=Path("/tmp/dense-on-train-claims"),
                        help="a scratch folder for the corpus's store (the cache is only read)")
    args = parser.parse_args()
    _, infra, documents = whole_documents(args.dataset, args.store, args.cache)
    split = load_split(args.dataset, SPLIT)
    query_ids = list(split.queries)
    claims = [split.queries[q] for q in query_ids]
    base = dense_scores(str(resolve_embedding_base("MiniLMEmbedding").source.path), infra, claims)
    learned = dense_scores(args.learned, infra, claims)
    lexical = LexicalScorer.fit(validate_and_transform(load_preset("keyword"), "retriever"), infra.chunks.texts)
    bm25 = lexical.score_matrix(claims)
    card = json.loads((Path(args.learned) / "dashrag-model-card.json").read_text(encoding="utf-8"))
    teacher = (card.get("recipe") or {}).get("teacher")
    figures = {"split": SPLIT, "claims": len(claims),
               "base_dense": ndcg_at_10(base, split, query_ids, documents),
               "learned_dense": ndcg_at_10(learned, split, query_ids, documents),
               "bm25": ndcg_at_10(bm25, split, query_ids, documents),
               "loss": (card.get("recipe") or {}).get("loss"),
               "steps": card["figures"]["train_steps"]}
    if teacher:
        figures["teacher"] = ndcg_at_10(base + teacher["lexical_weight"] * bm25, split, query_ids, documents)
    figures["learned_minus_base"] = round(figures["learned_dense"] - figures["base_dense"], 4)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
