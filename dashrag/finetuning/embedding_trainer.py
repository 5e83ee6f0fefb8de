"""Fine-tune a sentence-transformers bi-encoder on a split's judged pairs (``dashrag finetune embedding``).

The recipe (docs/finetuning.md): MultipleNegativesRankingLoss over (query, judged document, one
first-stage hard negative) triples, so every other document of a batch is an in-batch negative
too; batches never hold one text twice (``NO_DUPLICATES``: a query judged against two documents
would otherwise count its own positive as a negative). sentence-transformers' own trainer runs
it, with a fixed seed and full determinism, on the CPU unless told otherwise. Given a ``teacher``
(``--corpus``: the corpus's own hybrid, ``finetuning/teacher.py``), the same triples train
MarginMSELoss against the teacher's margins instead (GPL's recipe, distillation).

The model folder is written whole or not at all (a temporary folder renamed into place) and
loads offline by path in ``SentenceTransformerEmbedding`` (param ``model``); its card records the
base, the data, the splits, the hyperparameters and the figures reached.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from dashrag.errors import ConfigError, ConfigIssue
from dashrag.finetuning.base_model import BaseWeights, resolve_embedding_base
from dashrag.finetuning.budget import Costs, TrainingPlan, plan_training, prioritised_pairs
from dashrag.finetuning.model_card import save_model_folder
from dashrag.finetuning.negatives import negatives_per_pair
from dashrag.finetuning.pairs import JudgedPair
from dashrag.finetuning.progress import Progress, no_progress, quietly, trainer_callback, without_printed_logs
from dashrag.finetuning.step_probe import PROBE_STEPS, Rates, measure_rates, reading_at
from dashrag.finetuning.teacher import HybridTeacher
from dashrag.finetuning.trainer_arguments import shared_arguments
from dashrag.finetuning.training_data import TrainingData, dev_pool
from dashrag.finetuning.weight_interpolation import check_learned_share, interpolate_with_base

DEV_POOL_DEPTH = 5  # first-stage candidates per dev query in the dev pool (with its judged documents)
DEV_METRICS = "ndcg@10,recall@10"


@dataclass(frozen=True)
class EmbeddingHyperparameters:
    """How the bi-encoder is trained; every field is recorded in the model card."""

    epochs: int = 2
    batch_size: int = 32
    learning_rate: float = 3e-5
    warmup_ratio: float = 0.1
    max_seq_length: int = 256  # tokens per text while training (the teacher's margins read the same)
    reading_seq_length: int | None = None  # tokens the written model reads when it embeds; None: max_seq_length
    seed: int = 42
    negative_skip: int = 0  # unjudged first-stage candidates skipped before the hard negative
    attention_dropout: float | None = 0.0  # while training; None keeps the base model's (see load_base)

    def check(self) -> None:
        issues = [ConfigIssue(f"--{name.replace('_', '-')}", f"must be positive, not {value}")
                  for name, value in (("epochs", self.epochs), ("batch_size", self.batch_size),
                                      ("learning_rate", self.learning_rate), ("max_seq_length", self.max_seq_length),
                                      ("reading_seq_length", self.reading_seq_length))
                  if value is not None and value <= 0]
        if self.attention_dropout is not None and not 0 <= self.attention_dropout < 1:
            issues.append(ConfigIssue("attention_dropout", f"must be in [0, 1) or None, not {self.attention_dropout}"))
        if self.batch_size < 2:
            issues.append(ConfigIssue("--batch-size", "in-batch negatives need at least 2 pairs per batch"))
        if issues:
            raise ConfigError(issues)

    @property
    def reading_length(self) -> int:
        """The tokens the written model reads: a shorter training length buys steps, not a shorter reading
        (97.9% of SciFact's abstracts are longer than 128 tokens, docs/finetuning.md)."""
        return self.reading_seq_length or self.max_seq_length


@dataclass(frozen=True)
class Allowance:
    """How much training may cost: a time budget for the whole run (None: the recipe whole), a step cap,
    positives per query. The budget's clock runs from ``started`` (``time.perf_counter``), so a pipeline
    counts its mining too."""

    budget_s: float | None = None
    max_steps: int | None = None
    positives_per_query: int = 3
    started: float = field(default_factory=time.perf_counter)
    probe_steps: int = PROBE_STEPS

    def check(self) -> None:
        issues = [ConfigIssue(option, f"must be positive, not {value}")
                  for option, value in (("--time-budget", self.budget_s), ("--max-steps", self.max_steps),
                                        ("--positives-per-query", self.positives_per_query))
                  if value is not None and value <= 0]
        if issues:
            raise ConfigError(issues)


LaterSteps = Callable[[Rates], dict[str, float]]  # the estimated seconds of every step after training, by name


Columns = dict[str, list[str]]


def triples(data: TrainingData, pairs: Sequence[JudgedPair], skip: int) -> tuple[list[JudgedPair], Columns]:
    """The pairs kept and the training columns: anchor (query), positive (judged document), negative
    (first-stage miss). A pair whose query has no candidate left that is not judged relevant is dropped."""
    negatives = negatives_per_pair(data.candidates, data.split.qrels, pairs, skip)
    kept = [(p, n) for p, n in zip(pairs, negatives) if n is not None]
    return [p for p, _ in kept], {"anchor": [p.query for p, _ in kept], "positive": [p.document for p, _ in kept],
                                  "negative": [data.documents[n] for _, n in kept]}


def columns_of(plan: TrainingPlan, pairs: Sequence[JudgedPair], columns: dict[str, list[str]]) -> dict[str, list[str]]:
    """The rows of the pairs the plan chose (``columns`` holds one row per pair of ``pairs``)."""
    row = {pair: i for i, pair in enumerate(pairs)}
    picked = [row[pair] for pair in plan.pairs]
    return {name: [values[i] for i in picked] for name, values in columns.items()}


def dev_figure_seconds(data: TrainingData, rates: Rates) -> float:
    """Both dev-pool figures (base and fine-tuned): the pool's documents and the dev queries, encoded twice."""
    if data.dev is None:
        return 0.0
    pool, _ = dev_pool(data, DEV_POOL_DEPTH)
    return 2 * (len(pool) * rates.reading_document_s + len(data.dev) * rates.query_s)


def encode_unit(model: Any, texts: list[str]) -> np.ndarray:
    """Unit vectors of ``texts`` by a sentence-transformers model: the dev pool's figures, and the teacher's dense
    half (the base model, untrained)."""
    return np.asarray(model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
                                   show_progress_bar=False))


def pool_figures(model: Any, data: TrainingData, depth: int = DEV_POOL_DEPTH) -> dict[str, float] | None:
    """nDCG@10 and recall@10 of ``model`` ranking the dev pool (``dev_pool``) by cosine; None without dev."""
    from dashrag.evaluation.metrics import Evaluator

    if data.dev is None:
        return None
    pool, qrels = dev_pool(data, depth)
    documents = encode_unit(model, [data.documents[d] for d in pool])
    query_ids = list(data.dev.queries)
    queries = encode_unit(model, [data.dev.queries[q] for q in query_ids])
    scores = np.asarray(queries, dtype=np.float64) @ np.asarray(documents, dtype=np.float64).T
    run = {q: {pool[j]: float(scores[i, j]) for j in np.argsort(-scores[i], kind="stable")[:100]}
           for i, q in enumerate(query_ids)}
    figures = Evaluator(qrels, DEV_METRICS).evaluate(run).mean
    return {**{k: round(float(v), 6) for k, v in figures.items()}, "pool_documents": len(pool)}


ATTENTION_DROPOUT_KEYS = ("attention_probs_dropout_prob", "attention_dropout")  # BERT/MPNet/XLM-R, DistilBERT


def attention_dropout_overrides(path: str, dropout: float | None) -> dict[str, float]:
    """Config overrides that set attention dropout for training (0 by default), under whichever key the
    architecture uses; None keeps the base model's.

    Where the peak memory went (bench/bench_finetune_memory.py): with attention dropout on, PyTorch's
    scaled-dot-product attention cannot use its fused kernel and keeps every layer's full attention
    matrices (scores, probabilities, dropout mask: 12 heads x 256 x 256 per text) for the backward pass,
    two thirds of a MiniLM step's activations. Off, the fused kernel keeps none of them; hidden-layer
    dropout stays on (it regularises as well, and costs no such matrices)."""
    from transformers import AutoConfig

    if dropout is None:
        return {}
    config = AutoConfig.from_pretrained(path)
    return {key: dropout for key in ATTENTION_DROPOUT_KEYS if hasattr(config, key)}


def load_base(base: BaseWeights, max_seq_length: int, device: str, attention_dropout: float | None = 0.0) -> Any:
    from sentence_transformers import SentenceTransformer

    from dashrag.embeddings.model_source import set_offline_defaults

    set_offline_defaults()
    path = str(base.source.path)
    model = SentenceTransformer(path, device=device,
                                config_kwargs=attention_dropout_overrides(path, attention_dropout))
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
    allowance: Allowance = Allowance(),
    later: LaterSteps = lambda rates: {},
    announce: Callable[[TrainingPlan], None] = lambda plan: None,
    dev_figures: bool = True,
    teacher: HybridTeacher | None = None,
    learned_share: float = 1.0,
) -> dict[str, Any]:
    """Train from ``base`` on ``data`` within ``allowance``, write the model folder ``out`` with its card;
    return the card. Before training: measure the step and encoding rates, plan (``later`` estimates the
    caller's steps after training from the rates), and ``announce`` the plan. ``dev_figures=False`` leaves
    the dev pool's figures out (card ``dev_pool`` None, nothing budgeted for them): for a caller that
    measures the base and the trained model itself, on vectors it computes anyway (the ``--corpus``
    pipeline: the whole corpus, from the embedding cache). With a ``teacher`` the loss is MarginMSE against its
    margins over the planned triples, scored by the base model before training (their encoding is planned as
    part of each step's cost: a query and two documents a triple, one where the teacher reads the negatives'
    vectors from the base model's cached corpus vectors). With ``learned_share`` below 1 the trained weights are
    averaged with the base's before the model is written (WiSE-FT, ``weight_interpolation``); the card says α."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.losses import MarginMSELoss, MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers
    from transformers import set_seed

    hyper.check()
    allowance.check()
    check_learned_share(learned_share)
    weights = resolve_embedding_base(base)
    pairs, all_columns = triples(data, prioritised_pairs(data.pairs, allowance.positives_per_query, hyper.seed),
                                 hyper.negative_skip)
    if len(pairs) < 2:
        raise ConfigError(f"{data.fit.split}: {len(pairs)} trainable pair(s); at least 2 are needed")
    set_seed(hyper.seed)
    model = load_base(weights, hyper.max_seq_length, device, hyper.attention_dropout)
    loss = MultipleNegativesRankingLoss(model) if teacher is None else MarginMSELoss(model)
    timings = dict(data.timings)
    began = time.perf_counter()
    rates = measure_rates(model, loss, all_columns, hyper.batch_size, all_columns["positive"],
                          list(data.fit.queries.values()), steps=allowance.probe_steps, seed=hyper.seed,
                          reading_length=hyper.reading_length)
    timings["probe_s"] = time.perf_counter() - began
    estimates = {**({"dev figures": dev_figure_seconds(data, rates)} if dev_figures else {}), **later(rates)}
    teacher_step_s = 0.0 if teacher is None else hyper.batch_size * (
        rates.query_s + teacher.documents_per_triple(all_columns["negative"], hyper.max_seq_length) * rates.document_s)
    plan = plan_training(pairs, costs=Costs(spent_s=time.perf_counter() - allowance.started,
                                            step_s=rates.step_s + teacher_step_s, after_training_s=estimates),
                         budget_s=allowance.budget_s, batch_size=hyper.batch_size, epochs=hyper.epochs,
                         max_steps=allowance.max_steps, positives_per_query=allowance.positives_per_query,
                         seed=hyper.seed)
    announce(plan)
    began = time.perf_counter()
    with reading_at(model, hyper.reading_length):
        dev_base = pool_figures(model, data) if dev_figures else None
    timings["dev_s"] = time.perf_counter() - began
    began = time.perf_counter()
    columns = columns_of(plan, pairs, all_columns)
    margins = None
    if teacher is not None:
        margins = teacher.margins(lambda texts: encode_unit(model, texts), columns["anchor"], columns["positive"],
                                  columns["negative"], length=int(model.max_seq_length))
        columns["label"] = margins.margins.tolist()
        set_seed(hyper.seed)
    timings["teacher_s"] = time.perf_counter() - began
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dashrag-finetune-") as scratch:
        args = SentenceTransformerTrainingArguments(**shared_arguments(hyper, scratch, device), max_steps=plan.steps,
                                                    batch_sampler=BatchSamplers.NO_DUPLICATES)
        trainer = SentenceTransformerTrainer(
            model=model,
            args=args,
            train_dataset=Dataset.from_dict(columns),
            loss=loss,
            callbacks=[trainer_callback(progress)],
        )
        output = without_printed_logs(trainer).train()
    timings["train_s"] = time.perf_counter() - began
    if learned_share < 1:
        began = time.perf_counter()
        interpolate_with_base(model, load_base(weights, hyper.max_seq_length, device), learned_share)
        timings["interpolate_s"] = time.perf_counter() - began
    model.max_seq_length = hyper.reading_length  # what the written model reads (and the dev figures with it)
    began = time.perf_counter()
    dev_tuned = pool_figures(model, data) if dev_figures else None
    timings["dev_s"] += time.perf_counter() - began
    card = {
        "kind": "embedding",
        "base": {"named": weights.named, "identity": weights.source.identity},
        "data": {**data.describe(), "trainable_pairs": len(pairs)},
        "plan": plan.describe(),
        "recipe": {"loss": type(loss).__name__, "negatives_per_pair": 1,
                   "batch_sampler": "no_duplicates", "device": device, "learned_share": learned_share,
                   "teacher": None if margins is None else {**margins.describe(),
                                                            "encoding_per_step_s": round(teacher_step_s, 3)}},
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
