"""``dashrag finetune pipeline``: fine-tune, embed the corpus, tune the tree, write a preset; one command.

The steps, in order, each timed:

1. **mine**: read the split (never ``test`` unless forced), hold out the dev slice, rank every
   query with the first-stage tree (BM25) for hard negatives;
2. **train**: fine-tune the embedding on the fit queries' pairs (``embedding_trainer``), written
   atomically to the model folder with its card;
   skipped with ``settings.train`` False (``--no-training``): the base model's hybrid is tuned as is
   (a user who wants the tree fitted to their documents without the time or the risk of training);
3. **embed**: embed the corpus (each document whole) with the new model into the embedding cache,
   keyed by the model's content, so the tuner's trees read it and a later ``dashrag eval`` too;
4. **tune**: grid-search the hybrid tree (BM25 ``k1``/``b``, the fusion weight) on the dev slice
   (queries the model never trained on), and write the best tree as the preset;
5. **final** (only when asked, e.g. ``--final-eval test``): score the written preset on that
   split with per-node figures. It runs after the preset is fixed, so nothing chose anything on it.

What it learns from is ``settings.learn_from``: the split's judgements (``Judgements``, the default), or,
for a corpus nobody judged, the documents' own pseudo-queries (``PseudoQueries``, ``--corpus``). The
latter keeps a held-out slice of pseudo-queries apart and, after tuning, ships the learned tree only
when it beats the base (the untuned hybrid on the base model) on them (``keep_base``); the report says
which tree it wrote and why.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from dashrag.core.persistence import atomic_write_json
from dashrag.errors import ConfigError, ConfigIssue
from dashrag.evaluation.beir import EvaluationSplit
from dashrag.finetuning.base_model import resolve_embedding_base
from dashrag.finetuning.budget import TrainingPlan
from dashrag.finetuning.corpus_data import HELD_OUT_FRACTION, CorpusTrainingData, prepare_corpus_training_data
from dashrag.finetuning.doc2query import LLMQueryWriter
from dashrag.finetuning.embedding_trainer import Allowance, EmbeddingHyperparameters, train_embedding
from dashrag.finetuning.negatives import WHOLE_DOCUMENTS
from dashrag.finetuning.pairs import refuse_test_split
from dashrag.finetuning.progress import Progress, counter, no_progress, quietly
from dashrag.finetuning.pseudo_queries import SOURCES
from dashrag.finetuning.step_probe import Rates
from dashrag.finetuning.teacher import CachedVectors, HybridTeacher, LexicalScorer
from dashrag.finetuning.training_data import TrainingData, prepare_training_data
from dashrag.finetuning.weight_interpolation import LEARNED_SHARE

STEPS = ("mine", "train", "embed", "tune", "final")
K1_VALUES = (0.6, 0.9, 1.2, 1.5)
B_VALUES = (0.6, 0.75, 0.9, 1.0)
BM25_WEIGHTS = (0.2, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0)  # the dense child's weight stays 1: only the ratio matters
TUNE_METRIC = "ndcg@10"
FUSE_S = 0.002  # one fusion of two children's top 100 for one query (the tuner's per-point cost)
FINAL_METRICS = "ndcg@10,recall@100,mrr@10"
LLM_SAMPLE = 200  # documents an LLM writes queries for (--llm-sample)
LLM_BUDGET_SHARE = 0.25  # the LLM's calls stop after this share of --time-budget: training needs the rest


@dataclass(frozen=True)
class Judgements:
    """Learn from the judged split ``settings.split`` of the BEIR folder ``settings.dataset``."""

    def prepare(self, settings: PipelineSettings, progress: Progress) -> LearnedFrom:
        return JudgedData(prepare_training_data(
            settings.dataset, split=settings.split, dev_fraction=settings.dev_fraction, seed=settings.hyper.seed,
            first_stage=settings.first_stage, workdir=settings.workdir, force_test=settings.force_test,
            progress=progress))


@dataclass(frozen=True)
class PseudoQueries:
    """Learn from the pseudo-queries of the corpus ``settings.dataset`` (no judgement read), keeping the base
    tree unless the learned one beats it on the held-out slice."""

    sources: tuple[str, ...] = SOURCES
    held_out_fraction: float = HELD_OUT_FRACTION
    llm: dict[str, Any] | None = None  # an LLM component config: doc2query for a sample of documents
    llm_sample: int = LLM_SAMPLE
    distill: bool = True  # train on the untuned hybrid's margins (MarginMSE), not MNRL's hard labels (--recipe)
    learned_share: float = LEARNED_SHARE  # WiSE-FT: the trained weights' share, the base's the rest (--learned-share)

    def writers(self, settings: PipelineSettings) -> list[LLMQueryWriter]:
        """The LLM's doc2query writer when one is configured; its calls stop after LLM_BUDGET_SHARE of the budget."""
        if self.llm is None:
            return []
        deadline = (None if settings.time_budget_s is None
                    else time.monotonic() + LLM_BUDGET_SHARE * settings.time_budget_s)
        return [LLMQueryWriter(self.llm, self.llm_sample, settings.hyper.seed, deadline)]

    def prepare(self, settings: PipelineSettings, progress: Progress) -> LearnedFrom:
        """The pseudo-query data, mined; then the corpus embedded by the base model into the embedding cache
        (nothing to do when a tree on the base model already did it): the keep-the-base step's base tree and
        the base's dense figures read those vectors, the teacher its negatives' vectors, and the time it took
        counts as spent before the plan."""
        prepared = prepare_corpus_training_data(
            settings.dataset, workdir=settings.workdir, sources=self.sources,
            held_out_fraction=self.held_out_fraction, dev_fraction=settings.dev_fraction, seed=settings.hyper.seed,
            first_stage=settings.first_stage, progress=progress, writers=self.writers(settings))
        began = time.perf_counter()
        base_vectors = base_corpus_vectors(settings, progress)
        prepared.data.timings["embed_base_s"] = time.perf_counter() - began
        return UnjudgedData(prepared, self.distill, base_vectors, self.learned_share)


@dataclass(frozen=True)
class JudgedData:
    """Judged training data: the tuned tree ships as is (its dev slice was judged by people)."""

    data: TrainingData
    learned_share = 1.0  # judged queries are the user's own: the model is written as trained
    dev_figures = True  # the trainer's dev-pool figures (a few hundred documents): the card's base/fine-tuned figures

    def choose(self, settings: PipelineSettings, bm25: dict[str, Any], learned: dict[str, Any],
               infra: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        return learned, None

    def choice_cost(self, rates: Rates, fit_s: float, rank_s: float) -> dict[str, float]:
        return {}

    def teacher(self, first_stage: dict[str, Any]) -> HybridTeacher | None:
        return None  # people's judgements are the labels


@dataclass(frozen=True)
class UnjudgedData:
    """Pseudo-query training data: the tuned tree ships only when it beats the base on the held-out slice."""

    prepared: CorpusTrainingData
    distill: bool
    base_vectors: CachedVectors  # the base model's corpus vectors (the embedding cache's): the teacher's negatives
    learned_share: float  # WiSE-FT after training: pseudo-queries are spans, a user's queries are not
    # No dev-pool figures in the trainer: its pool is most of the corpus here (a pseudo-query's top 5 over
    # thousands of dev queries), encoded twice; the choice scores both dense models on the whole corpus instead,
    # from the vectors the embedding cache already holds (docs/finetuning.md).
    dev_figures = False

    @property
    def data(self) -> TrainingData:
        return self.prepared.data

    def choose(self, settings: PipelineSettings, bm25: dict[str, Any], learned: dict[str, Any],
               infra: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The keep-the-base rule, the dense model first: the learned model stays in the tree only when it alone
        beats the base model alone on the held-out pseudo-queries; otherwise the tuned tree takes the base model
        back (its fusion weight re-tuned for it on the dev slice). Then the tree: the tuned one ships only when
        its hybrid beats the untuned base hybrid on the same queries. Every corpus vector is read from the
        embedding cache: the base's embedded before training, the learned model's by the embed step."""
        from dashrag.finetuning.keep_base import BASE, LEARNED, choose_dense_model, compare_on_held_out, held_out_score

        base_model = base_model_path(settings)
        base = hybrid_config(base_model, bm25)
        held_out = self.prepared.held_out
        dense_alone = {"base": round(held_out_score(dense_child(base), held_out, infra), 6)}
        if settings.train:
            dense_alone["learned"] = round(held_out_score(dense_child(learned), held_out, infra), 6)
        dense_model = choose_dense_model(dense_alone)
        tuned = learned
        if settings.train and dense_model["chosen"] == BASE:
            tuned = retuned_with_model(learned, base_model, settings, tuning_split(self.data), infra)
        choice = compare_on_held_out(base, tuned, held_out, infra)
        report = {**choice.to_json(), "held_out_queries": len(held_out), "dense_alone": dense_alone,
                  "dense_model": dense_model, "sources": list(self.prepared.sources),
                  "written": self.prepared.written}
        return (tuned if choice.shipped == LEARNED else base), report

    def teacher(self, first_stage: dict[str, Any]) -> HybridTeacher | None:
        """The untuned hybrid (the first stage's BM25 over these documents and the base model) whose margins the
        model learns, unless ``--recipe mnrl``: span pseudo-queries under MNRL's hard labels taught MiniLM the
        span task and cost it on SciFact's claims (docs/finetuning.md)."""
        if not self.distill:
            return None
        return HybridTeacher(LexicalScorer.fit(first_stage, list(self.data.documents.values())), self.base_vectors)

    def choice_cost(self, rates: Rates, fit_s: float, rank_s: float) -> dict[str, float]:
        """The keep-the-base step's estimate: both hybrids fitted (their corpus vectors are cached: no document is
        embedded) and every held-out query ranked and encoded by each, then encoded again by each dense model
        alone."""
        held_out = len(self.prepared.held_out)
        dev = len(tuning_split(self.data))
        retune = fit_s + dev * (rank_s + rates.query_s) + len(BM25_WEIGHTS) * dev * FUSE_S  # when the model loses
        return {"choose": 2 * (fit_s + held_out * (rank_s + rates.query_s)) + 2 * held_out * rates.query_s + retune}


LearnedFrom = JudgedData | UnjudgedData


@dataclass(frozen=True)
class PipelineSettings:
    """Everything the pipeline does, recorded whole in its report."""

    dataset: Path
    out: Path
    model_dir: Path
    split: str = "train"
    base: str = "MiniLMEmbedding"
    dev_fraction: float = 0.1
    first_stage: str = "keyword"
    hyper: EmbeddingHyperparameters = field(default_factory=EmbeddingHyperparameters)
    k1_values: tuple[float, ...] = K1_VALUES
    b_values: tuple[float, ...] = B_VALUES
    bm25_weights: tuple[float, ...] = BM25_WEIGHTS
    workdir: Path = Path(".dashrag-work")
    final_eval: str | None = None
    force_test: bool = False
    device: str = "cpu"
    time_budget_s: float | None = 30 * 60  # the whole pipeline's wall time; None: no limit
    max_steps: int | None = None
    positives_per_query: int = 3
    learn_from: Judgements | PseudoQueries = field(default_factory=Judgements)
    train: bool = True  # False (--no-training): no model is trained; the base model's hybrid is tuned as is


def model_reference(model_dir: Path) -> str:
    """How the preset names the model folder: ``./relative`` from the current folder when it lies
    under it (a preset read from the repository root finds it), else absolute. Written as a path,
    so a missing folder fails validation naming it, never a hub lookup."""
    absolute = model_dir.resolve()
    try:
        return "./" + absolute.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(absolute)


def embedding_config(model: str) -> dict[str, Any]:
    """The embedding of the hybrid's dense child: one config, so every step keys the embedding cache alike."""
    return {"component": "SentenceTransformerEmbedding", "params": {"model": model}}


def base_model_path(settings: PipelineSettings) -> str:
    return str(resolve_embedding_base(settings.base).source.path)


def dense_child(hybrid: dict[str, Any]) -> dict[str, Any]:
    """The dense retriever of a ``hybrid_config`` tree."""
    child: dict[str, Any] = hybrid["params"]["children"][1]
    return child


def with_model(hybrid: dict[str, Any], model: str) -> dict[str, Any]:
    """``hybrid`` (a ``hybrid_config`` tree) with its dense child's model replaced by ``model``."""
    swapped = copy.deepcopy(hybrid)
    dense_child(swapped)["params"]["embedding"] = embedding_config(model)
    return swapped


def retuned_with_model(hybrid: dict[str, Any], model: str, settings: PipelineSettings, split: EvaluationSplit,
                       infra: Any) -> dict[str, Any]:
    """``hybrid`` with ``model`` as its dense child, its fusion weight searched again on ``split`` (the weight
    suits the model it was tuned with; BM25's ``k1`` and ``b`` stay: one BM25 fit)."""
    from dashrag.evaluation.tuner import tune

    result = tune(with_model(hybrid, model), tune_params(settings)[2:], infra=infra, train=split, test=None,
                  metric=TUNE_METRIC)
    config: dict[str, Any] = result.best_point.config
    return config


def hybrid_config(model: str, bm25: dict[str, Any]) -> dict[str, Any]:
    """BM25 (the first stage's params) and the fine-tuned dense child, fused by min-max (relative score)."""
    keyword = copy.deepcopy(bm25)
    keyword.setdefault("params", {})["top_k"] = 100
    return {
        "component": "ParallelRetriever",
        "params": {
            "children": [
                keyword,
                {"component": "DenseEmbeddingRetriever",
                 "params": {"top_k": 100, "similarity_metric": "cosine", "embedding": embedding_config(model)}},
            ],
            "merge_strategy": "relative_score",
            "weights": [0.5, 1.0],
        },
    }


def tune_params(settings: PipelineSettings) -> list[Any]:
    from dashrag.evaluation.tuner import parse_param

    def joined(values: tuple[float, ...]) -> str:
        return ",".join(str(v) for v in values)

    return [parse_param(f"params.children[0].params.k1={joined(settings.k1_values)}"),
            parse_param(f"params.children[0].params.b={joined(settings.b_values)}"),
            parse_param(f"params.weights[0]={joined(settings.bm25_weights)}")]


def check_settings(settings: PipelineSettings) -> dict[str, Any]:
    """Everything checkable before minutes of work: splits, the first stage, the grid; the first stage's config."""
    from dashrag.core.validation import validate_and_transform
    from dashrag.evaluation.tuner import plan_grid
    from dashrag.presets import load_preset

    refuse_test_split(settings.split, settings.force_test)
    if settings.final_eval is not None and settings.final_eval == settings.split:
        raise ConfigError([ConfigIssue("--final-eval", f"is the training split {settings.split!r}")])
    bm25 = validate_and_transform(load_preset(settings.first_stage), "retriever")
    if bm25["component"] != "BM25Retriever":
        raise ConfigError([ConfigIssue("--first-stage", f"the hybrid tunes a BM25Retriever's k1 and b; "
                                                         f"{settings.first_stage!r} is a {bm25['component']}")])
    settings.hyper.check()
    base = resolve_embedding_base(settings.base)
    plan_grid(hybrid_config(str(base.source.path), bm25), tune_params(settings))  # the model folder is not made yet
    return bm25


def corpus_vectors(embedding: Any, dataset: Path, workdir: Path, progress: Progress,
                   step: str) -> tuple[Any, Any]:
    """Chunk and store the corpus (documents whole), embed it with ``embedding`` into the embedding cache (read
    from it when there already); the stored corpus's infrastructure and the vectors, a row per chunk."""
    import dashrag
    from dashrag.api import prepare_corpus
    from dashrag.embeddings.cache import document_vectors

    infra = prepare_corpus(dashrag.Corpus.from_path(dataset), workdir, WHOLE_DOCUMENTS)
    progress(step, 0, len(infra.chunks))
    vectors = document_vectors(embedding, infra.chunks, infra.env_path, on_block=lambda d, n: progress(step, d, n))
    return infra, vectors


def embed_corpus(embedding_config: dict[str, Any], dataset: Path, workdir: Path, progress: Progress,
                 step: str = "embed") -> Any:
    """The corpus embedded with ``embedding_config`` into the embedding cache (``corpus_vectors``); the stored
    corpus's infrastructure."""
    from dashrag.core.factory import build_as
    from dashrag.embeddings.base import EmbeddingModel

    embedding = build_as(embedding_config, EmbeddingModel, "embedding")
    try:
        infra, _ = corpus_vectors(embedding, dataset, workdir, progress, step)
    finally:
        embedding.close()
    return infra


def base_corpus_vectors(settings: PipelineSettings, progress: Progress) -> CachedVectors:
    """The corpus embedded by the base model (``corpus_vectors``), by text, with the tokens its model read a
    text at: its own limit, as the hybrid's dense child reads it (no ``max_seq_length`` in its config)."""
    from dashrag.core.factory import build_as
    from dashrag.embeddings.sentence_transformer import SentenceTransformerEmbedding

    embedding = build_as(embedding_config(base_model_path(settings)), SentenceTransformerEmbedding, "embedding")
    try:
        infra, vectors = corpus_vectors(embedding, settings.dataset, settings.workdir, progress, "embed base")
        return CachedVectors.of(infra.chunks.texts, vectors, embedding.reading_length())
    finally:
        embedding.close()


def qrels_queries(dataset: Path, split: str) -> int:
    """How many queries a split judges, counted without reading its judgements as data (the final split is
    read only in the last step): distinct first fields of its qrels file."""
    from dashrag.evaluation.beir import qrels_file

    with qrels_file(dataset, split).open(encoding="utf-8") as lines:
        return len({line.split("\t", 1)[0] for line in lines if "\t" in line} - {"query-id"})


def later_steps(settings: PipelineSettings, learned_from: LearnedFrom) -> Callable[[Rates], dict[str, float]]:
    """The pipeline's steps after training, estimated from the measured rates: embedding every document;
    the tuner (BM25 refitted and ranking the dev queries once per (k1, b), the dense child's answers once,
    a fusion per point: its subtree cache); the keep-the-base choice where there is one; the final evaluation
    (one fit, every query ranked and encoded)."""
    data = learned_from.data
    fit_s = data.timings["first_stage_fit_s"]
    rank_s = data.timings["rank_per_query_ms"] / 1000
    tuned = len(tuning_split(data))
    fits = len(settings.k1_values) * len(settings.b_values)
    points = fits * len(settings.bm25_weights)
    final_queries = 0 if settings.final_eval is None else qrels_queries(settings.dataset, settings.final_eval)

    def estimate(rates: Rates) -> dict[str, float]:
        steps = {"embed": len(data.documents) * rates.reading_document_s,
                 "tune": fits * (fit_s + tuned * rank_s) + tuned * rates.query_s + points * tuned * FUSE_S}
        steps.update(learned_from.choice_cost(rates, fit_s, rank_s))
        if settings.final_eval is not None:
            steps["final"] = fit_s + final_queries * (rank_s + rates.query_s)
        return steps

    return estimate


def tuning_grid(settings: PipelineSettings, plan: dict[str, Any] | None, embed_s: float,
                elapsed_s: float) -> tuple[list[Any], str]:
    """The grid that still fits the budget after embedding: the whole grid, or only the fusion weights
    (the first stage's own k1 and b, nothing refitted) when the later steps, their estimates scaled by how
    much slower the embedding ran than estimated, would overrun the budget. Without training (``plan`` None)
    there is nothing to size: the budget is what training would have been given, so the whole grid runs."""
    full = tune_params(settings)
    if settings.time_budget_s is None:
        return full, "whole grid (no time budget)"
    if plan is None:
        return full, "whole grid (nothing trained: --no-training)"
    estimates = plan["estimated_after_training_s"]
    slower = max(1.0, embed_s / max(estimates["embed"], 1e-9))
    later_s = slower * sum(estimates[step] for step in ("tune", "choose", "final") if step in estimates)
    if elapsed_s + later_s <= settings.time_budget_s:
        return full, "whole grid"
    return full[2:], (f"fusion weights only: the whole grid's {later_s / 60:.1f} min estimate (scaled x{slower:.2f}, "
                      f"as the embedding ran) would overrun the budget after {elapsed_s / 60:.1f} min")


def tuning_split(data: TrainingData) -> EvaluationSplit:
    """The dev slice (queries the model never trained on), or the whole split without one."""
    return data.dev if data.dev is not None else data.split


@quietly
def run_pipeline(settings: PipelineSettings, progress: Progress = no_progress,
                 announce: Callable[[TrainingPlan], None] = lambda plan: None) -> dict[str, Any]:
    """Run every step within ``settings.time_budget_s``; write the model folder, the preset (``settings.out``);
    return the report. ``announce`` receives the training plan before training starts."""
    from dashrag.evaluation.beir import load_split, qrels_file
    from dashrag.evaluation.tuner import tune

    started = time.perf_counter()
    allowance = Allowance(budget_s=settings.time_budget_s, max_steps=settings.max_steps,
                          positives_per_query=settings.positives_per_query, started=started)
    allowance.check()
    bm25 = check_settings(settings)
    if settings.final_eval is not None:
        qrels_file(settings.dataset, settings.final_eval)  # there, but not read before the last step
    timings: dict[str, float] = {}
    began = time.perf_counter()
    learned_from = settings.learn_from.prepare(settings, progress)
    data = learned_from.data
    if "embed_base_s" in data.timings:
        timings["embed_base_s"] = data.timings["embed_base_s"]
    timings["mine_s"] = time.perf_counter() - began - timings.get("embed_base_s", 0.0)
    card: dict[str, Any] | None = None
    model = base_model_path(settings)
    if settings.train:
        began = time.perf_counter()
        card = train_embedding(data, settings.model_dir, base=settings.base, hyper=settings.hyper,
                               device=settings.device, progress=progress, allowance=allowance,
                               later=later_steps(settings, learned_from), announce=announce,
                               dev_figures=learned_from.dev_figures, teacher=learned_from.teacher(bm25),
                               learned_share=learned_from.learned_share)
        timings["train_s"] = time.perf_counter() - began
        model = model_reference(settings.model_dir)
    config = hybrid_config(model, bm25)
    began = time.perf_counter()
    infra = embed_corpus(dense_child(config)["params"]["embedding"], settings.dataset, settings.workdir, progress)
    timings["embed_s"] = time.perf_counter() - began
    began = time.perf_counter()
    params, grid_note = tuning_grid(settings, None if card is None else card["plan"], timings["embed_s"],
                                    time.perf_counter() - started)
    tuned_on = tuning_split(data)
    points = math.prod(len(p.values) for p in params)
    advance = counter(progress, "tune", points)
    result = tune(config, params, infra=infra, train=tuned_on, test=None, metric=TUNE_METRIC,
                  on_point=lambda _: advance(1))
    best = result.best_point
    timings["tune_s"] = time.perf_counter() - began
    began = time.perf_counter()
    shipped, choice = learned_from.choose(settings, bm25, best.config, infra)
    timings["choose_s"] = time.perf_counter() - began
    atomic_write_json(settings.out, shipped)
    report: dict[str, Any] = {
        "settings": {**asdict(settings), "dataset": str(settings.dataset), "out": str(settings.out),
                     "model_dir": str(settings.model_dir), "workdir": str(settings.workdir)},
        "model_card": card,
        "tuning": {"split": tuned_on.split, "queries": len(tuned_on), "points": len(result.points),
                   "grid_chosen": grid_note,
                   "best": {"values": best.values, TUNE_METRIC: best.train[TUNE_METRIC]},
                   "grid": [{"values": p.values, TUNE_METRIC: p.train[TUNE_METRIC]} for p in result.points]},
        "preset": str(settings.out),
        "choice": choice,
        "model_reference": shipped["params"]["children"][1]["params"]["embedding"]["params"]["model"],
        "final": None,
        "timings": timings,
    }
    if settings.final_eval is not None:
        began = time.perf_counter()
        final_split = load_split(settings.dataset, settings.final_eval)
        report["final"] = final_evaluation(shipped, final_split, infra, progress)
        timings["final_s"] = time.perf_counter() - began
    timings["total_s"] = sum(timings.values())
    report["budget"] = {"budget_s": settings.time_budget_s, "wall_s": round(time.perf_counter() - started, 2),
                        "planned_total_s": None if card is None else card["plan"]["estimated_total_s"]}
    return report


def final_evaluation(config: dict[str, Any], split: EvaluationSplit, infra: Any, progress: Progress) -> dict[str, Any]:
    """The written preset scored on ``split`` (every node), after nothing is left to choose."""
    from dashrag.core.factory import build_component
    from dashrag.evaluation.runner import evaluate_tree

    tree = build_component(config, "retriever")
    tree.inject_infra(infra)
    tree.init_model()
    try:
        advance = counter(progress, "final", len(split))
        return evaluate_tree(tree, split, FINAL_METRICS, on_batch=advance)  # type: ignore[arg-type]
    finally:
        tree.close()


def default_model_dir(out: Path) -> Path:
    """``components/NAME.json`` → ``models/NAME-embedding`` (beside the current folder; never committed)."""
    return Path("models") / f"{out.stem}-embedding"


__all__ = ["Judgements", "PipelineSettings", "PseudoQueries", "STEPS", "default_model_dir", "run_pipeline"]
