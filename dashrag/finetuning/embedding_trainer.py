"""Fine-tune a sentence-transformers bi-encoder on a split's judged pairs (``dashrag finetune embedding``).

The recipe (docs/finetuning.md): MultipleNegativesRankingLoss over (query, judged document, one
first-stage hard negative) triples, so every other document of a batch is an in-batch negative
too; batches never hold one text twice (``NO_DUPLICATES``: a query judged against two documents
would otherwise count its own positive as a negative). sentence-transformers' own trainer runs
it, with a fixed seed and full determinism, on the CPU unless told otherwise.

The model folder is written whole or not at all (a temporary folder renamed into place) and
loads offline by path in ``SentenceTransformerEmbedding`` (param ``model``); its card records the
base, the data, the splits, the hyperparameters and the figures reached.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dashrag.errors import ConfigError, ConfigIssue
from dashrag.finetuning.base_model import BaseWeights, resolve_embedding_base
from dashrag.finetuning.model_card import save_model_folder
from dashrag.finetuning.negatives import negatives_per_pair
from dashrag.finetuning.progress import Progress, no_progress, quietly, trainer_callback, without_printed_logs
from dashrag.finetuning.trainer_arguments import shared_arguments
from dashrag.finetuning.training_data import TrainingData, dev_pool

DEV_POOL_DEPTH = 5  # first-stage candidates per dev query in the dev pool (with its judged documents)
DEV_METRICS = "ndcg@10,recall@10"


@dataclass(frozen=True)
class EmbeddingHyperparameters:
    """How the bi-encoder is trained; every field is recorded in the model card."""

    epochs: int = 2
    batch_size: int = 32
    learning_rate: float = 3e-5
    warmup_ratio: float = 0.1
    max_seq_length: int = 256
    seed: int = 42
    negative_skip: int = 0  # unjudged first-stage candidates skipped before the hard negative

    def check(self) -> None:
        issues = [ConfigIssue(f"--{name.replace('_', '-')}", f"must be positive, not {value}")
                  for name, value in (("epochs", self.epochs), ("batch_size", self.batch_size),
                                      ("learning_rate", self.learning_rate), ("max_seq_length", self.max_seq_length))
                  if value <= 0]
        if self.batch_size < 2:
            issues.append(ConfigIssue("--batch-size", "in-batch negatives need at least 2 pairs per batch"))
        if issues:
            raise ConfigError(issues)


def triples(data: TrainingData, skip: int) -> dict[str, list[str]]:
    """The training columns: anchor (query), positive (judged document), negative (first-stage miss).
    A pair whose query has no unjudged candidate left is dropped (counted in the card)."""
    negatives = negatives_per_pair(data.candidates, data.split.qrels, data.pairs, skip)
    rows = [(p.query, p.document, data.documents[n]) for p, n in zip(data.pairs, negatives) if n is not None]
    return {"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows], "negative": [r[2] for r in rows]}


def pool_figures(model: Any, data: TrainingData, depth: int = DEV_POOL_DEPTH) -> dict[str, float] | None:
    """nDCG@10 and recall@10 of ``model`` ranking the dev pool (``dev_pool``) by cosine; None without dev."""
    from dashrag.evaluation.metrics import Evaluator

    if data.dev is None:
        return None
    pool, qrels = dev_pool(data, depth)
    documents = model.encode([data.documents[d] for d in pool], normalize_embeddings=True, convert_to_numpy=True,
                             show_progress_bar=False)
    query_ids = list(data.dev.queries)
    queries = model.encode([data.dev.queries[q] for q in query_ids], normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)
    scores = np.asarray(queries, dtype=np.float64) @ np.asarray(documents, dtype=np.float64).T
    run = {q: {pool[j]: float(scores[i, j]) for j in np.argsort(-scores[i], kind="stable")[:100]}
           for i, q in enumerate(query_ids)}
    figures = Evaluator(qrels, DEV_METRICS).evaluate(run).mean
    return {**{k: round(float(v), 6) for k, v in figures.items()}, "pool_documents": len(pool)}


def load_base(base: BaseWeights, max_seq_length: int, device: str) -> Any:
    from sentence_transformers import SentenceTransformer

    from dashrag.embeddings.model_source import set_offline_defaults

    set_offline_defaults()
    model = SentenceTransformer(str(base.source.path), device=device)
    model.max_seq_length = max_seq_length
    return model


@quietly
def train_embedding(
    data: TrainingData,
    out: Path,
    *,
    base: str = "MiniLMEmbedding",
    hyper: EmbeddingHyperparameters = EmbeddingHyperparameters(),
    device: str = "cpu",
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Train from ``base`` on ``data``, write the model folder ``out`` with its card; return the card."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers
    from transformers import set_seed

    hyper.check()
    weights = resolve_embedding_base(base)
    columns = triples(data, hyper.negative_skip)
    if len(columns["anchor"]) < 2:
        raise ConfigError(f"{data.fit.split}: {len(columns['anchor'])} trainable pair(s); at least 2 are needed")
    set_seed(hyper.seed)
    model = load_base(weights, hyper.max_seq_length, device)
    timings = dict(data.timings)
    began = time.perf_counter()
    dev_base = pool_figures(model, data)
    timings["dev_s"] = time.perf_counter() - began
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dashrag-finetune-") as scratch:
        args = SentenceTransformerTrainingArguments(**shared_arguments(hyper, scratch, device),
                                                    batch_sampler=BatchSamplers.NO_DUPLICATES)
        trainer = SentenceTransformerTrainer(
            model=model,
            args=args,
            train_dataset=Dataset.from_dict(columns),
            loss=MultipleNegativesRankingLoss(model),
            callbacks=[trainer_callback(progress)],
        )
        output = without_printed_logs(trainer).train()
    timings["train_s"] = time.perf_counter() - began
    began = time.perf_counter()
    dev_tuned = pool_figures(model, data)
    timings["dev_s"] += time.perf_counter() - began
    card = {
        "kind": "embedding",
        "base": {"named": weights.named, "identity": weights.source.identity},
        "data": {**data.describe(), "trainable_pairs": len(columns["anchor"])},
        "recipe": {"loss": "MultipleNegativesRankingLoss", "negatives_per_pair": 1,
                   "batch_sampler": "no_duplicates", "device": device},
        "hyperparameters": asdict(hyper),
        "figures": {
            "train_loss": round(float(output.training_loss), 6),
            "train_steps": int(output.global_step),
            "dev_pool": None if dev_base is None else {"base": dev_base, "fine_tuned": dev_tuned,
                                                      "pool_depth": DEV_POOL_DEPTH},
        },
        "timings": {k: round(v, 2) for k, v in timings.items()},
    }
    save_model_folder(Path(out), model, card)
    return card
