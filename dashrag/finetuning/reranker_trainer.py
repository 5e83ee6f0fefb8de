"""Fine-tune a cross-encoder on a split's judgements (``dashrag finetune reranker``).

Every judged (query, document) pair is a positive (label 1); each fit query's first ``negatives``
unjudged first-stage candidates are negatives (label 0): the documents a reranker over that first
stage has to push down. BinaryCrossEntropyLoss through sentence-transformers' CrossEncoderTrainer,
seeded and deterministic. The dev figure that matters is whether the reranker *beats its first
stage* on held-out queries: the first stage's own top ``DEV_RERANK_DEPTH`` against the same list
reordered by the model. A preset uses the reranker only where it does (docs/finetuning.md).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dashrag.errors import ConfigError, ConfigIssue
from dashrag.finetuning.base_model import resolve_reranker_base
from dashrag.finetuning.model_card import save_model_folder
from dashrag.finetuning.negatives import hard_negatives
from dashrag.finetuning.progress import Progress, no_progress, quietly, trainer_callback, without_printed_logs
from dashrag.finetuning.trainer_arguments import shared_arguments
from dashrag.finetuning.training_data import TrainingData

DEV_RERANK_DEPTH = 20  # first-stage candidates per dev query the reranker reorders
DEV_METRICS = "ndcg@10,recall@10"


@dataclass(frozen=True)
class RerankerHyperparameters:
    """How the cross-encoder is trained; every field is recorded in the model card."""

    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    max_seq_length: int = 256
    negatives: int = 4
    seed: int = 42
    negative_skip: int = 0

    def check(self) -> None:
        issues = [ConfigIssue(f"--{name.replace('_', '-')}", f"must be positive, not {value}")
                  for name, value in asdict(self).items()
                  if name not in ("seed", "negative_skip", "warmup_ratio") and value <= 0]
        if issues:
            raise ConfigError(issues)


def labelled_pairs(data: TrainingData, hyper: RerankerHyperparameters) -> dict[str, list[Any]]:
    """The training columns: query, document, label (1 judged relevant, 0 a first-stage hard negative)."""
    rows: list[tuple[str, str, float]] = [(p.query, p.document, 1.0) for p in data.pairs]
    for query_id, query in data.fit.queries.items():
        for document_id in hard_negatives(data.candidates, data.split.qrels, query_id, hyper.negatives,
                                          hyper.negative_skip):
            rows.append((query, data.documents[document_id], 0.0))
    return {"query": [r[0] for r in rows], "document": [r[1] for r in rows], "label": [r[2] for r in rows]}


def rerank_figures(model: Any, data: TrainingData, depth: int = DEV_RERANK_DEPTH) -> dict[str, Any] | None:
    """The first stage's top ``depth`` on the dev queries, and the same lists reordered by ``model``."""
    from dashrag.evaluation.metrics import Evaluator

    if data.dev is None:
        return None
    first: dict[str, dict[str, float]] = {}
    reranked: dict[str, dict[str, float]] = {}
    for query_id, query in data.dev.queries.items():
        ranked = data.candidates.ranked.get(query_id, [])[:depth]
        first[query_id] = {d: float(depth - r) for r, d in enumerate(ranked)}
        scores = model.predict([(query, data.documents[d]) for d in ranked], show_progress_bar=False) if ranked \
            else np.empty(0)
        reranked[query_id] = {d: float(s) for d, s in zip(ranked, np.asarray(scores).reshape(-1))}
    evaluator = Evaluator(data.dev.qrels, DEV_METRICS)
    before = {k: round(float(v), 6) for k, v in evaluator.evaluate(first).mean.items()}
    after = {k: round(float(v), 6) for k, v in evaluator.evaluate(reranked).mean.items()}
    return {"depth": depth, "first_stage": before, "reranked": after,
            "beats_first_stage": after["ndcg@10"] > before["ndcg@10"]}


@quietly
def train_reranker(
    data: TrainingData,
    out: Path,
    *,
    base: str = "MiniLMEmbedding",
    hyper: RerankerHyperparameters = RerankerHyperparameters(),
    device: str = "cpu",
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Train a one-label cross-encoder from ``base``, write the folder ``out`` with its card; return the card."""
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    from transformers import set_seed

    from dashrag.embeddings.model_source import set_offline_defaults

    hyper.check()
    weights = resolve_reranker_base(base)
    columns = labelled_pairs(data, hyper)
    set_seed(hyper.seed)
    set_offline_defaults()
    model = CrossEncoder(str(weights.source.path), num_labels=1, max_length=hyper.max_seq_length, device=device)
    timings = dict(data.timings)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dashrag-finetune-") as scratch:
        args = CrossEncoderTrainingArguments(**shared_arguments(hyper, scratch, device))
        trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=Dataset.from_dict(columns),
                                      loss=BinaryCrossEntropyLoss(model), callbacks=[trainer_callback(progress)])
        output = without_printed_logs(trainer).train()
    timings["train_s"] = time.perf_counter() - began
    began = time.perf_counter()
    dev = rerank_figures(model, data)
    timings["dev_s"] = time.perf_counter() - began
    card = {
        "kind": "reranker",
        "base": {"named": weights.named, "identity": weights.source.identity},
        "data": {**data.describe(), "labelled_pairs": len(columns["label"]),
                 "positives": int(sum(columns["label"]))},
        "recipe": {"loss": "BinaryCrossEntropyLoss", "num_labels": 1, "device": device},
        "hyperparameters": asdict(hyper),
        "figures": {"train_loss": round(float(output.training_loss), 6), "train_steps": int(output.global_step),
                    "dev_rerank": dev},
        "timings": {k: round(v, 2) for k, v in timings.items()},
    }
    save_model_folder(Path(out), model, card)
    return card
