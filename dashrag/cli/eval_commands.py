"""``dashrag eval`` and ``dashrag tune``: score a tree on a BEIR dataset, and grid-search its parameters.

Both take CONFIG like ``dashrag index`` (a JSON file, a preset name, inline
JSON); ``eval`` also takes a folder saved by ``dashrag index`` (it is loaded,
never refitted), ``tune`` reads such a folder's config and refits it.

Building needs a working folder for the store and the caches (embeddings):
``--workdir``, by default ``.dashrag-work/<dataset folder name>`` in the
current directory, so a second run on the same dataset reuses the chunked
store and every cached embedding. The store file is named by the corpus
fingerprint, so other chunkers of the same dataset live side by side.

Every config, metric, path and value is checked before any corpus is read.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import dashrag
from dashrag.api import prepare_corpus
from dashrag.cli.config_files import resolve_component, resolve_config
from dashrag.cli.console import console, user_errors
from dashrag.cli.paths import check_output_file
from dashrag.cli.progress_lines import shown_progress
from dashrag.cli.safe_text import markup_safe, plain
from dashrag.core.persistence import atomic_write_json, read_manifest
from dashrag.core.retriever import Retriever
from dashrag.errors import ConfigError, ConfigIssue, CorpusError
from dashrag.evaluation.defaults import DEFAULT_BATCH_SIZE, DEFAULT_TOP_K

if TYPE_CHECKING:  # the commands import the evaluation stack (pytrec_eval, ...) when they run
    from dashrag.evaluation.tuner import TuningResult

log = logging.getLogger(__name__)

DEFAULT_METRICS = "ndcg@10,recall@100,mrr@10"
WORK_ROOT = Path(".dashrag-work")
SHOWN_POINTS = 20

CONFIG_HELP = "A JSON file, a preset name from components/, inline JSON, or (eval) a folder saved by `dashrag index`."
TOP_K_HELP = "top_k hint passed to every node (deep enough for recall@100); 0: each node's own top_k."


def is_saved_folder(config: str) -> bool:
    """CONFIG names a folder (a saved tree, or an error naming it); inline JSON never does."""
    return not config.lstrip().startswith("{") and Path(config).is_dir()


def default_workdir(dataset: Path) -> Path:
    """Where builds on ``dataset`` keep their store and caches unless ``--workdir`` says otherwise."""
    return WORK_ROOT / dataset.resolve().name


def check_saved_corpus(retriever: Retriever, corpus: dashrag.Corpus, folder: Path, dataset: Path) -> None:
    """A saved tree must have been built on the dataset's corpus: documents the dataset lacks mean
    another dataset (an error); dataset documents the tree lacks make the figures low (a warning)."""
    saved = set(retriever.require_infra().chunks.document_ids)
    known = {document.id for document in corpus}
    foreign = saved - known
    if foreign:
        raise CorpusError(f"{folder} was built on another corpus: {len(foreign)} of its documents are not in "
                          f"{dataset} (e.g. {sorted(foreign)[0]!r})")
    missing = len(known - saved)
    if missing:
        log.warning(
            "%s lacks %d of the %d documents of %s: they can never be found", folder, missing, len(known), dataset
        )


def checked_chunker(chunker: str | None) -> dict | None:
    """The --chunker spec, validated before any corpus is read (None: the library's default chunker)."""
    spec = resolve_component(chunker)
    if spec is not None:
        dashrag.validate_and_transform(spec, "chunker")
    return spec


def print_wide(console: Any, renderable: Any) -> None:
    """Print a table whole: a terminal wraps at its width, but a file or pipe gets full rows, not ellipses."""
    if console.is_terminal:
        console.print(renderable)
        return
    width = Measurement.get(console, console.options.update(max_width=1000), renderable).maximum
    Console(file=console.file, width=max(width, console.width)).print(renderable)


def progress_bar(console: Any) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def read_tune_params(specs: list[str]) -> list:
    """Every ``--param``, with the problems of all of them in one ConfigError."""
    from dashrag.evaluation.tuner import parse_param

    params: list = []
    issues: list[ConfigIssue] = []
    for spec in specs:
        try:
            params.append(parse_param(spec))
        except ConfigError as exc:
            issues.extend(exc.issues)
    if issues:
        raise ConfigError(issues)
    return params


def points_table(result: TuningResult) -> Table:
    table = Table(title=markup_safe(f"{result.metric} on {result.train_split} · best first"))
    for param in result.params:
        table.add_column(plain(param.path))
    table.add_column(result.metric, justify="right")
    order = sorted(range(len(result.points)), key=lambda i: (-result.points[i].train[result.metric], i))
    for i in order[:SHOWN_POINTS]:
        point = result.points[i]
        style = "bold green" if i == result.best else None
        table.add_row(
            *(plain(point.values[p.path]) for p in result.params), f"{point.train[result.metric]:.4f}", style=style
        )
    if len(order) > SHOWN_POINTS:
        table.caption = f"{len(order) - SHOWN_POINTS} more points in the --json report"
    return table


def comparison_table(result: TuningResult) -> Table:
    assert result.test is not None and result.baseline_test is not None  # `dashrag tune` always gives a test split
    labels = list(result.test["metrics"])
    table = Table(title=markup_safe(f"{result.test['dataset']} · {result.test['split']} · "
                                    f"{result.test['n_queries']} queries"))
    table.add_column("tree")
    for label in labels:
        table.add_column(label, justify="right")
    table.add_row("untuned", *(f"{result.baseline_test['metrics'][m]:.4f}" for m in labels))
    table.add_row("tuned", *(f"{result.test['metrics'][m]:.4f}" for m in labels), style="bold")
    return table


app = typer.Typer()


@app.command("eval")
@user_errors
def eval_command(
    config: str = typer.Argument(..., help=CONFIG_HELP),
    dataset: Path = typer.Option(
        ..., "--dataset", help="A BEIR folder: corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv."
    ),
    split: str = typer.Option("test", help="Which qrels/<split>.tsv to score."),
    metrics: str = typer.Option(
        DEFAULT_METRICS, help="Comma-separated: ndcg@k, recall@k, mrr@k, map@k, precision@k."
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the JSON report here."),
    plot: Path | None = typer.Option(None, help="Write a PNG of the per-node metrics here."),
    top_k: int = typer.Option(DEFAULT_TOP_K, "--top-k", min=0, help=TOP_K_HELP),
    chunker: str | None = typer.Option(
        None, help="A chunker name or JSON (default: StructureChunker 2000/200: pages and sections, then by size)."
    ),
    workdir: Path | None = typer.Option(None, help="Store and caches (default: .dashrag-work/<dataset name>)."),
    batch_size: int = typer.Option(DEFAULT_BATCH_SIZE, min=1, help="Queries per retrieve_batch call."),
    filters: str | None = typer.Option(None, "--filter", help=(
        "A metadata filter as JSON: every query is answered under it (docs/filters.md).")),
) -> None:
    """Build (or load) a tree, run a split's judged queries, print every node's metrics."""
    from dashrag.evaluation.beir import load_split
    from dashrag.evaluation.metrics import parse_metrics
    from dashrag.evaluation.report import per_node_table, plot_per_node
    from dashrag.evaluation.runner import evaluate_tree

    metric_list = [m.label for m in parse_metrics(metrics)]
    wanted = None if filters is None else parse_filter_json(filters)  # a bad filter: exit 2 before building
    check_output_file(json_out, "--json")
    check_output_file(plot, "--plot")
    saved = is_saved_folder(config)
    if saved and chunker is not None:
        raise ConfigError("--chunker applies when building; a saved folder keeps the chunks it was built on")
    if saved:
        read_manifest(Path(config))  # a clear error for a folder that is not a saved tree
    else:
        raw = resolve_config(config)
        dashrag.validate_and_transform(raw, "retriever")
    chunker_spec = checked_chunker(chunker)
    evaluation_split = load_split(dataset, split)
    with shown_progress(console, "reading the corpus"):
        corpus = dashrag.Corpus.from_beir(dataset)
    started = time.perf_counter()
    with shown_progress(console, "loading" if saved else "chunking, storing and fitting") as progress:
        if saved:
            retriever = dashrag.load(config)
            check_saved_corpus(retriever, corpus, Path(config), dataset)
        else:
            retriever = dashrag.build(raw, corpus, workdir or default_workdir(dataset), chunker=chunker_spec,
                                      progress=progress)
    build_s = time.perf_counter() - started
    stage, done = f"{evaluation_split.dataset} {split}: answering", [0]
    with shown_progress(console, stage) as progress:
        def answered(n: int) -> None:
            done[0] += n
            progress(stage, done[0], len(evaluation_split))

        report = evaluate_tree(
            retriever,
            evaluation_split,
            ",".join(metric_list),
            top_k=top_k,
            batch_size=batch_size,
            on_batch=answered,
            filters=wanted,
        )
    report["config"] = retriever.to_config()
    report["timings"]["build_s"] = build_s
    print_wide(console, per_node_table(report))
    timings = report["timings"]
    console.print(
        f"{'loaded' if saved else 'built'} in {build_s:.1f}s · retrieval {timings['retrieval_s']:.2f}s · "
        f"evaluation {timings['eval_s']:.3f}s",
        highlight=False,
    )
    if json_out is not None:
        atomic_write_json(json_out, report)
        console.print(plain(f"wrote {json_out}"), highlight=False)
    if plot is not None:
        plot_per_node(report, plot)
        console.print(plain(f"wrote {plot}"), highlight=False)
    retriever.close()

@app.command("tune")
@user_errors
def tune_command(
    config: str = typer.Argument(..., help=CONFIG_HELP + " (a saved folder's config is refitted)"),
    dataset: Path = typer.Option(..., "--dataset", help="A BEIR folder with qrels for both splits."),
    param: list[str] = typer.Option(
        ..., "--param", help="PATH=v1,v2,... e.g. params.children[0].params.k1=0.9,1.2 (repeat)."
    ),
    metric: str = typer.Option("ndcg@10", help="The metric the search maximises on the train split."),
    metrics: str = typer.Option(DEFAULT_METRICS, help="The metrics of the test reports."),
    out: Path = typer.Option(Path("tuned.json"), "--out", help="Write the tuned (normalised) config here."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the tuning report (every point) here."),
    plot: Path | None = typer.Option(None, help="Write a PNG of the metric against each parameter here."),
    top_k: int = typer.Option(DEFAULT_TOP_K, "--top-k", min=0, help=TOP_K_HELP),
    chunker: str | None = typer.Option(
        None, help="A chunker name or JSON (default: StructureChunker 2000/200: pages and sections, then by size)."
    ),
    workdir: Path | None = typer.Option(None, help="Store and caches (default: .dashrag-work/<dataset name>)."),
    train_split: str = typer.Option("train", help="The split the search runs on."),
    test_split: str = typer.Option("test", help="The split the best point is reported on."),
    force_test: bool = typer.Option(
        False, "--force-test", help="Allow --train-split test (the search then sees the final figure's queries)."
    ),
) -> None:
    """Grid-search parameters on the train split; report the best on test; write the tuned config."""
    from dashrag.evaluation.beir import load_split
    from dashrag.evaluation.metrics import parse_metric, parse_metrics
    from dashrag.evaluation.tuner import plan_grid, plot_tuning, tune
    from dashrag.finetuning.pairs import refuse_test_split

    refuse_test_split(train_split, force_test, "--train-split")
    raw = read_manifest(Path(config))["config"] if is_saved_folder(config) else resolve_config(config)
    chunker_spec = checked_chunker(chunker)
    for path, option in ((out, "--out"), (json_out, "--json"), (plot, "--plot")):
        check_output_file(path, option)
    params = read_tune_params(param)
    points = plan_grid(raw, params, top_k)  # every path, value and combination before any work
    parse_metric(metric)
    parse_metrics(metrics)
    if train_split == test_split:
        raise ConfigError(
            [ConfigIssue("--train-split", f"is the test split {test_split!r}: tune on other queries")]
        )
    train, test = load_split(dataset, train_split), load_split(dataset, test_split)
    with console.status("reading, chunking and storing the corpus"):
        infra = prepare_corpus(dashrag.Corpus.from_beir(dataset), workdir or default_workdir(dataset), chunker_spec)
    with progress_bar(console) as progress:
        task = progress.add_task(markup_safe(f"{len(points)} points on {train_split}"), total=len(points))
        result = tune(
            raw,
            params,
            infra=infra,
            train=train,
            test=test,
            metric=metric,
            metrics=metrics,
            top_k=top_k,
            on_point=lambda _: progress.advance(task),
        )
    print_wide(console, points_table(result))
    print_wide(console, comparison_table(result))
    console.print(
        f"{len(result.points)} points, {len(result.fitted)} retriever fits, "
        f"search {result.timings['search_s']:.1f}s",
        highlight=False,
    )
    atomic_write_json(out, result.best_point.config)
    console.print(plain(f"wrote the tuned config to {out}"), highlight=False)
    if json_out is not None:
        atomic_write_json(json_out, result.to_json())
        console.print(plain(f"wrote {json_out}"), highlight=False)
    if plot is not None:
        plot_tuning(result, plot)
        console.print(plain(f"wrote {plot}"), highlight=False)


def parse_filter_json(text: str) -> Any:
    """``--filter``'s JSON, checked now (a FilterError naming the path: exit 2) and kept as JSON for the report."""
    import json

    from dashrag.filters import parse_filter

    parse_filter(text)
    return json.loads(text)
