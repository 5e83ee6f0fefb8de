"""``dashrag finetune embedding|reranker|pipeline``: learn from a BEIR split's judgements.

The work is in ``dashrag/finetuning/``; this module maps it to commands, checks every option
before the corpus is read, and shows one progress display (a bar per step, with elapsed and
remaining time: the estimate). ``test`` is refused as a training split unless ``--force-test``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from dashrag.cli.console import console, say, user_errors
from dashrag.cli.eval_commands import default_workdir, print_wide
from dashrag.cli.paths import check_output_file
from dashrag.core.persistence import atomic_write_json
from dashrag.errors import ConfigError, ConfigIssue, PersistenceError

DATASET_HELP = "A BEIR folder: corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv."
STEP_NAMES = {"mine": "mining hard negatives", "embed base": "embedding (base model)", "train": "training",
              "embed": "embedding the corpus",
              "tune": "tuning the tree", "final": "final evaluation"}


class StepBars:
    """One rich bar per step, added when the step first reports; remaining time is rich's estimate."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, step: str, done: int, total: int) -> None:
        if step not in self.tasks:
            self.tasks[step] = self.progress.add_task(STEP_NAMES.get(step, step), total=total)
        self.progress.update(self.tasks[step], completed=done, total=total)


def step_display() -> Progress:
    return Progress(TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("left"), TimeRemainingColumn(), console=console)


def check_model_folder(path: Path, option: str = "--out") -> None:
    """A model folder to write: new, or one `dashrag finetune` wrote (replaced whole); never another folder."""
    from dashrag.finetuning.model_card import CARD_NAME

    if path.exists() and not path.is_dir():
        raise PersistenceError(f"{option} {path}: is a file, not a folder")
    if path.is_dir() and any(path.iterdir()) and not (path / CARD_NAME).is_file():
        raise PersistenceError(f"{option} {path}: the folder holds files but no {CARD_NAME}; "
                               "give a new folder (a model folder written by `dashrag finetune` is replaced whole)")


def hyperparameters(epochs: int, batch_size: int, learning_rate: float, max_seq_length: int, seed: int,
                    reading_seq_length: int | None = None) -> Any:
    from dashrag.finetuning.embedding_trainer import EmbeddingHyperparameters

    hyper = EmbeddingHyperparameters(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                                     max_seq_length=max_seq_length, reading_seq_length=reading_seq_length, seed=seed)
    hyper.check()
    return hyper


def print_card_figures(card: dict[str, Any]) -> None:
    figures = card["figures"]
    say(f"trained {figures['train_steps']} steps, loss {figures['train_loss']:.4f}, "
                        f"in {card['timings']['train_s']:.0f}s")
    dev = figures.get("dev_pool")
    if dev:
        say(f"dev pool ({dev['base']['pool_documents']} documents) nDCG@10: base "
                            f"{dev['base']['ndcg@10']:.4f} → fine-tuned {dev['fine_tuned']['ndcg@10']:.4f}")


def print_plan(plan: Any) -> None:
    """The training plan, before it is spent: what was measured, what was chosen, why."""
    say("plan: " + "; ".join(plan.reasons))


def train_on_split(dataset: Path, split: str, dev_fraction: float, seed: int, first_stage: str, workdir: Path | None,
                   force_test: bool, train: Callable[[Any, StepBars], dict[str, Any]]) -> dict[str, Any]:
    """Read the split, mine its negatives and run ``train`` on it under one progress display; the model card."""
    from dashrag.finetuning.training_data import prepare_training_data

    with step_display() as display:
        bars = StepBars(display)
        data = prepare_training_data(dataset, split=split, dev_fraction=dev_fraction, seed=seed,
                                     first_stage=first_stage, workdir=workdir or default_workdir(dataset),
                                     force_test=force_test, progress=bars)
        return train(data, bars)


app = typer.Typer(name="finetune", no_args_is_help=True, help="Fine-tune models on a BEIR split's judgements.")


@app.command("embedding")
@user_errors
def embedding_command(
    dataset: Path = typer.Option(..., "--dataset", help=DATASET_HELP),
    out: Path = typer.Option(..., "--out", help="The model folder to write (loads by path in "
                                                "SentenceTransformerEmbedding's `model`)."),
    split: str = typer.Option("train", help="The qrels split to learn from (test is refused)."),
    base: str = typer.Option("MiniLMEmbedding", help="An embedding component (name or JSON) or a model folder."),
    epochs: int = typer.Option(2, min=1),
    batch_size: int = typer.Option(32, min=2, help="Pairs per batch (the in-batch negatives)."),
    learning_rate: float = typer.Option(3e-5, min=0.0),
    max_seq_length: int = typer.Option(256, min=8, help="Tokens read per text while training."),
    seed: int = typer.Option(42),
    dev_fraction: float = typer.Option(0.1, help="Queries held out of training for the card's dev figures."),
    first_stage: str = typer.Option("keyword", help="The preset whose ranking gives the hard negatives."),
    workdir: Path | None = typer.Option(None, help="Store and caches (default: .dashrag-work/<dataset name>)."),
    force_test: bool = typer.Option(False, "--force-test", help="Allow --split test."),
) -> None:
    """Fine-tune a bi-encoder on the split's judged pairs (BM25 hard negatives); write a model folder."""
    from dashrag.finetuning.base_model import resolve_embedding_base
    from dashrag.finetuning.embedding_trainer import train_embedding
    from dashrag.finetuning.pairs import refuse_test_split

    refuse_test_split(split, force_test)
    hyper = hyperparameters(epochs, batch_size, learning_rate, max_seq_length, seed)
    check_model_folder(out)
    resolve_embedding_base(base)
    card = train_on_split(dataset, split, dev_fraction, seed, first_stage, workdir, force_test,
                          lambda data, bars: train_embedding(data, out, base=base, hyper=hyper, progress=bars))
    print_card_figures(card)
    say(f"wrote {out}")

@app.command("reranker")
@user_errors
def reranker_command(
    dataset: Path = typer.Option(..., "--dataset", help=DATASET_HELP),
    out: Path = typer.Option(..., "--out", help="The model folder to write (loads by path in "
                                                "CrossEncoderRetriever's `model`)."),
    split: str = typer.Option("train", help="The qrels split to learn from (test is refused)."),
    base: str = typer.Option("MiniLMEmbedding", help="An embedding component (name or JSON) or a model folder."),
    epochs: int = typer.Option(1, min=1),
    batch_size: int = typer.Option(16, min=1),
    learning_rate: float = typer.Option(2e-5, min=0.0),
    max_seq_length: int = typer.Option(256, min=8, help="Tokens read per (query, document) pair."),
    negatives: int = typer.Option(4, min=1, help="First-stage hard negatives per query."),
    seed: int = typer.Option(42),
    dev_fraction: float = typer.Option(0.1, help="Queries held out of training for the card's dev figures."),
    first_stage: str = typer.Option("keyword", help="The preset whose ranking gives the candidates."),
    workdir: Path | None = typer.Option(None, help="Store and caches (default: .dashrag-work/<dataset name>)."),
    force_test: bool = typer.Option(False, "--force-test", help="Allow --split test."),
) -> None:
    """Fine-tune a cross-encoder on the split's judgements (first-stage negatives); write a model folder."""
    from dashrag.finetuning.base_model import resolve_reranker_base
    from dashrag.finetuning.pairs import refuse_test_split
    from dashrag.finetuning.reranker_trainer import RerankerHyperparameters, train_reranker

    refuse_test_split(split, force_test)
    hyper = RerankerHyperparameters(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                                    max_seq_length=max_seq_length, negatives=negatives, seed=seed)
    hyper.check()
    check_model_folder(out)
    resolve_reranker_base(base)
    card = train_on_split(dataset, split, dev_fraction, seed, first_stage, workdir, force_test,
                          lambda data, bars: train_reranker(data, out, base=base, hyper=hyper, progress=bars))
    figures = card["figures"]
    say(f"trained {figures['train_steps']} steps, loss {figures['train_loss']:.4f}")
    dev = figures.get("dev_rerank")
    if dev:
        verdict = "beats" if dev["beats_first_stage"] else "does not beat"
        say(f"dev nDCG@10: first stage {dev['first_stage']['ndcg@10']:.4f}, reranked "
                            f"{dev['reranked']['ndcg@10']:.4f}: the reranker {verdict} its first stage")
    say(f"wrote {out}")

RECIPES = ("distill", "mnrl")  # --recipe with --corpus: the hybrid's margins (MarginMSE), or MNRL's hard labels


def learning_source(dataset: Path | None, corpus: Path | None, sources: str | None, held_out_fraction: float,
                    llm: str | None, llm_sample: int, recipe: str | None = None,
                    learned_share: float | None = None) -> tuple[Any, Path]:
    """(what the pipeline learns from, the folder or file holding the documents): --dataset's judgements or
    --corpus's pseudo-queries, exactly one of them."""
    from dashrag.cli.config_files import resolve_component
    from dashrag.core.validation import validate_and_transform
    from dashrag.finetuning.pipeline import Judgements, PseudoQueries
    from dashrag.finetuning.pseudo_queries import SOURCES, chosen_sources
    from dashrag.finetuning.weight_interpolation import LEARNED_SHARE, check_learned_share

    if (dataset is None) == (corpus is None):
        raise ConfigError([ConfigIssue("--dataset/--corpus", "give exactly one: --dataset (a judged BEIR folder) "
                                                             "or --corpus (documents without judgements)")])
    if corpus is None:
        assert dataset is not None
        if llm is not None:
            raise ConfigError([ConfigIssue("--llm", "writes queries for --corpus; --dataset has judged queries")])
        if recipe is not None:
            raise ConfigError([ConfigIssue("--recipe", "chooses how --corpus pseudo-queries train; --dataset's "
                                                       "judgements train MNRL")])
        if learned_share is not None:
            raise ConfigError([ConfigIssue("--learned-share", "averages a --corpus model with its base; a model "
                                                              "learned from --dataset's judgements is written as "
                                                              "trained")])
        return Judgements(), dataset
    if recipe is not None and recipe not in RECIPES:
        raise ConfigError([ConfigIssue("--recipe", f"{recipe!r} is not one of {', '.join(RECIPES)}")])
    chosen = chosen_sources(SOURCES if sources is None else (n.strip() for n in sources.split(",") if n.strip()))
    share = LEARNED_SHARE if learned_share is None else learned_share
    check_learned_share(share)
    llm_config = resolve_component(llm)
    if llm_config is not None:
        llm_config = validate_and_transform(llm_config, "llm")  # a bad config fails now, not after minutes
    return PseudoQueries(sources=chosen, held_out_fraction=held_out_fraction, llm=llm_config,
                         llm_sample=llm_sample, distill=recipe != "mnrl", learned_share=share), corpus


@app.command("pipeline")
@user_errors
def pipeline_command(
    dataset: Path | None = typer.Option(None, "--dataset", help=DATASET_HELP + " Learn from its judgements."),
    corpus: Path | None = typer.Option(None, "--corpus", help="Learn without judgements from these documents' "
                                                              "pseudo-queries (a folder, JSONL or BEIR folder)."),
    sources: str | None = typer.Option(None, "--sources",
                                       help="With --corpus: the pseudo-query sources, comma-separated, among "
                                            "title, heading, held_out_sentence, section_opening (default: all)."),
    held_out_fraction: float = typer.Option(0.1, "--held-out-fraction",
                                            help="With --corpus: pseudo-queries kept apart to decide whether the "
                                                 "learned tree beats the base (it ships only then)."),
    llm: str | None = typer.Option(None, "--llm", help="With --corpus: an LLM component (name, JSON file or "
                                                       "inline JSON, e.g. LiteLLMModel) that writes queries for a "
                                                       "sample of documents (doc2query), within the budget."),
    llm_sample: int = typer.Option(200, "--llm-sample", min=1, help="With --llm: how many documents it writes "
                                                                    "queries for."),
    recipe: str | None = typer.Option(None, "--recipe", help="With --corpus: distill (default: learn the untuned "
                                                             "hybrid's score margins, MarginMSE) or mnrl (the "
                                                             "judged recipe's hard labels)."),
    learned_share: float | None = typer.Option(None, "--learned-share",
                                               help="With --corpus: after training, average the learned weights "
                                                    "with the base model's (WiSE-FT), this share learned (default "
                                                    "0.5; 1: as trained)."),
    out: Path = typer.Option(..., "--out", help="The preset to write, e.g. components/NAME.json."),
    model_dir: Path | None = typer.Option(None, "--model-dir", help="The model folder (default: "
                                                                     "models/<NAME>-embedding; never committed)."),
    split: str = typer.Option("train", help="The qrels split to learn and tune on (test is refused)."),
    base: str = typer.Option("MiniLMEmbedding", help="An embedding component (name or JSON) or a model folder."),
    epochs: int = typer.Option(2, min=1),
    batch_size: int = typer.Option(32, min=2),
    learning_rate: float = typer.Option(3e-5, min=0.0),
    max_seq_length: int = typer.Option(256, min=8, help="Tokens read per text while training."),
    reading_seq_length: int | None = typer.Option(None, "--reading-seq-length", min=8,
                                                  help="Tokens the written model reads when it embeds (default: "
                                                       "--max-seq-length); a shorter training length buys steps."),
    seed: int = typer.Option(42),
    dev_fraction: float = typer.Option(0.1, help="Queries held out of training; the tree is tuned on them."),
    first_stage: str = typer.Option("keyword", help="The BM25 preset: hard negatives and the hybrid's keyword "
                                                    "child."),
    workdir: Path | None = typer.Option(None, help="Store and caches (default: .dashrag-work/<dataset name>)."),
    final_eval: str | None = typer.Option(None, "--final-eval", help="After the preset is written, score it on "
                                                                       "this split (e.g. test)."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the pipeline report (every step) here."),
    force_test: bool = typer.Option(False, "--force-test", help="Allow --split test."),
    time_budget: float = typer.Option(30.0, "--time-budget", min=0.0, metavar="MINUTES",
                                      help="Wall time for the whole pipeline; training gets what the measured "
                                           "costs of the other steps leave (0: no limit)."),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1, help="At most this many training steps."),
    positives_per_query: int = typer.Option(3, "--positives-per-query", min=1,
                                            help="Judged documents trained per query (highest grades first)."),
    no_training: bool = typer.Option(False, "--no-training",
                                     help="With --corpus: train no model; tune the base model's hybrid (BM25 k1 "
                                          "and b, the fusion weight) on the pseudo-queries, keep-the-base rule "
                                          "included."),
) -> None:
    """Fine-tune the embedding, embed the corpus, tune the hybrid tree on the dev slice, write a preset.

    It measures a few real steps first, then says how many pairs and steps fit --time-budget and why."""
    from dashrag.evaluation.report import per_node_table
    from dashrag.finetuning.base_model import resolve_embedding_base
    from dashrag.finetuning.pipeline import PipelineSettings, default_model_dir, run_pipeline

    learn_from, documents = learning_source(dataset, corpus, sources, held_out_fraction, llm, llm_sample, recipe,
                                            learned_share)
    if no_training and dataset is not None:
        raise ConfigError([ConfigIssue("--no-training", "tunes a tree on --corpus pseudo-queries; with judged queries "
                                                        "(--dataset) tune it with `dashrag tune`")])
    if no_training and max_steps is not None:
        raise ConfigError([ConfigIssue("--max-steps", "limits training; --no-training trains nothing")])
    if no_training and recipe is not None:
        raise ConfigError([ConfigIssue("--recipe", "chooses how a model trains; --no-training trains nothing")])
    if no_training and learned_share is not None:
        raise ConfigError([ConfigIssue("--learned-share", "averages a trained model; --no-training trains nothing")])
    check_output_file(out, "--out")
    check_output_file(json_out, "--json")
    folder = model_dir or default_model_dir(out)
    check_model_folder(folder, "--model-dir")
    resolve_embedding_base(base)
    settings = PipelineSettings(
        dataset=documents, out=out, model_dir=folder, split=split, base=base, dev_fraction=dev_fraction,
        first_stage=first_stage, workdir=workdir or default_workdir(documents), final_eval=final_eval,
        force_test=force_test, hyper=hyperparameters(epochs, batch_size, learning_rate, max_seq_length, seed,
                                                     reading_seq_length),
        time_budget_s=time_budget * 60 or None, max_steps=max_steps, positives_per_query=positives_per_query,
        learn_from=learn_from, train=not no_training)
    with step_display() as display:
        report = run_pipeline(settings, StepBars(display), announce=print_plan)
    if report["model_card"] is not None:
        print_card_figures(report["model_card"])
    tuning = report["tuning"]
    say(f"tuned {tuning['points']} points on {tuning['split']} ({tuning['queries']} queries): "
                        f"best {tuning['best']['values']} nDCG@10 {tuning['best']['ndcg@10']:.4f}")
    if report["choice"] is not None:
        say(f"wrote the {report['choice']['shipped']} tree: {report['choice']['reason']}")
        dense = report["choice"]["dense_alone"]
        learned = f", learned {dense['learned']:.4f}" if "learned" in dense else ""
        say(f"the dense model alone on the held-out pseudo-queries: base {dense['base']:.4f}{learned} nDCG@10")
        say(f"the {report['choice']['dense_model']['chosen']} model: {report['choice']['dense_model']['reason']}")
    if report["final"] is not None:
        print_wide(console, per_node_table(report["final"]))
    steps = " · ".join(f"{name[:-2]} {seconds:.0f}s" for name, seconds in report["timings"].items())
    say(f"steps: {steps}")
    budget = report["budget"]
    if budget["budget_s"] is not None:
        planned = "" if budget["planned_total_s"] is None else f" (planned {budget['planned_total_s'] / 60:.1f} min)"
        say(f"wall {budget['wall_s'] / 60:.1f} min of the {budget['budget_s'] / 60:.1f} min budget{planned}")
    say(f"wrote {out} (model {report['model_reference']})")
    if json_out is not None:
        atomic_write_json(json_out, report)
        say(f"wrote {json_out}")

