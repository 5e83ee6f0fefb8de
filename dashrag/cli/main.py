"""The ``dashrag`` command.

Every command is wrapped in ``user_errors`` (cli/console.py): a DashragError is one
``error: ...`` line on stderr with exit code 2, never a traceback; so is a usage error
(:mod:`dashrag.cli.usage`). Everything printed that came from data or the user goes
through :mod:`dashrag.cli.safe_text` (no markup, no terminal escapes).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import typer
from rich import box
from rich.table import Table
from rich.text import Text

import dashrag
from dashrag.cli.config_files import resolve_component, resolve_config
from dashrag.cli.console import console, say, user_errors
from dashrag.cli.eval_commands import register_eval_commands
from dashrag.cli.finetune_commands import register_finetune_commands
from dashrag.cli.mcp_commands import register_mcp_command
from dashrag.cli.output import print_table, results_json
from dashrag.cli.paths import check_output_folder, create_output_folder
from dashrag.cli.pg_commands import register_pg_commands
from dashrag.cli.safe_text import json_line, plain
from dashrag.cli.serve import register_serve_command
from dashrag.cli.update_commands import register_update_commands
from dashrag.cli.usage import OneLineErrors
from dashrag.core.config_json import loads_config
from dashrag.core.registry import all_components, get_component
from dashrag.core.restriction import Restriction
from dashrag.core.trace import format_trace
from dashrag.display import visible
from dashrag.documents.corpus import refuse_lone_surrogates
from dashrag.documents.model import ScoredChunk
from dashrag.errors import ConfigError, CorpusError, QueryError, excerpt
from dashrag.evaluation.runs import format_trec_run, run_from_results

# jsonschema (schema) and SQLAlchemy (the store) are imported by the commands that use them: a keyword
# `dashrag query` must not pay for them (tests/cli/test_cold_query_imports.py, bench/bench_cold_query.py).

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Retriever trees from JSON.",
                  cls=OneLineErrors, pretty_exceptions_enable=False)


@app.command()
@user_errors
def components() -> None:
    """List the registered components with their kind and description."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
    table.add_column("component", style="bold", overflow="fold", max_width=28)  # one name has 42 characters
    table.add_column("kind", style="dim", no_wrap=True)
    table.add_column("description", overflow="fold")
    for name, cls in all_components():
        table.add_row(Text(visible(name)), Text(cls.META.kind), Text(visible(cls.META.display["en"].description)))
    console.print(table)


@app.command()
@user_errors
def schema(name: str) -> None:
    """Print the JSON Schema of one component."""
    from dashrag.core.schema import component_schema

    print(json_line(component_schema(get_component(name)), indent=2))


@app.command("export-schemas")
@user_errors
def export_schemas_command(
    root: Path = typer.Option(Path("."), help="Folder that holds schemas/ and frontend_meta/ (the checkout)."),
) -> None:
    """Regenerate schemas/ and frontend_meta/ from the code."""
    from dashrag.core.schema import export_schemas

    written = export_schemas(root)
    console.print(plain(f"wrote {len(written)} files under {root}/schemas and {root}/frontend_meta"), highlight=False)


@app.command()
@user_errors
def index(
    config: str = typer.Argument(..., help="A JSON file, a preset name from components/, or inline JSON."),
    corpus: Path = typer.Option(
        ..., "--corpus", help="A folder of .txt/.md files, or a BEIR corpus.jsonl[.gz] or folder."
    ),
    out: Path = typer.Option(..., "--out", help="Folder to save the built retriever in."),
    chunker: str | None = typer.Option(
        None, help="A chunker name or JSON (default: RecursiveCharacterChunker 2000/200)."
    ),
    store: str | None = typer.Option(None, help="SQLAlchemy URL of the store (default: an SQLite file inside --out)."),
    cache_dir: Path | None = typer.Option(
        None,
        envvar="DASHRAG_CACHE_DIR",
        help="Folder for caches such as embeddings (default: --out); share it between builds.",
    ),
    overwrite: bool = typer.Option(
        False,
        "--overwrite",
        help="Replace the saved tree in --out, or save into a non-empty folder that holds no saved tree (its files "
        "are kept); and let engine indexes (Qdrant, PostgreSQL) replace a collection or table that holds something "
        "else.",
    ),
    follow_symlinks: bool = typer.Option(
        False, "--follow-symlinks", help="Read files that symbolic links in a corpus folder point to."
    ),
) -> None:
    """Chunk a corpus, store it, build and fit the tree, and save it."""
    from dashrag.api import build_tree, construct_tree
    from dashrag.store.store import Store

    raw = resolve_config(config)
    root = construct_tree(raw)  # every config problem before any work; the build validates no more
    chunker_spec = resolve_component(chunker)
    if chunker_spec is not None:
        dashrag.validate_and_transform(chunker_spec, "chunker")
    check_output_folder(out, "--out", overwrite)
    if store is not None:
        Store(store, read_only=True).close()  # a missing driver or a malformed URL, before any work
    with console.status("reading the corpus"):
        documents = dashrag.Corpus.from_path(corpus, follow_symlinks=follow_symlinks)
    say(f"read {len(documents)} documents" + (f" (skipped {len(documents.skipped)})" if documents.skipped else ""))
    created = not out.exists()
    create_output_folder(out, "--out")
    with console.status("building") as status:
        def progress(stage: str, done: int = 0, total: int | None = None) -> None:
            status.update(plain(f"{stage} {done}/{total}" if total else stage))

        try:
            report = build_tree(root, documents, out, name=config if not config.lstrip().startswith("{") else None,
                                chunker=chunker_spec, store_url=store, cache_dir=cache_dir, overwrite=overwrite,
                                progress=progress)
        except BaseException:
            if created:  # a failed build leaves no --out where there was none
                shutil.rmtree(out, ignore_errors=True)
            raise
    say(f"indexed {report.chunks} chunks in {report.seconds:.1f}s; saved to {out}")  # one copyable line, never wrapped


def _read_queries(path: Path) -> list[tuple[str, str]]:
    """A BEIR queries.jsonl: one ``{"_id", "text"}`` per line, ids unique (a TREC run is keyed by them)."""
    if not path.is_file():
        raise QueryError(f"{path}: no such queries file")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise QueryError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    queries: list[tuple[str, str]] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = loads_config(line, f"{path}:{number}")
            refuse_lone_surrogates(line, record, f"{path}:{number}")
        except (ConfigError, CorpusError) as exc:
            raise QueryError(str(exc)) from None
        qid, text = (record.get("_id"), record.get("text")) if isinstance(record, dict) else (None, None)
        if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not isinstance(text, str):
            raise QueryError(f"{path}:{number}: expected a JSON object with '_id' (a string or an integer) "
                             "and 'text' (a string)")
        qid = str(qid)
        if qid in first_line:
            raise QueryError(f"{path}:{number}: query id {excerpt(qid)} repeats line {first_line[qid]} "
                             "(a run keeps one result list per id)")
        first_line[qid] = number
        queries.append((qid, text))
    if not queries:
        raise QueryError(f"{path}: no queries")
    return queries


@app.command()
@user_errors
def query(
    folder: Path = typer.Argument(..., help="A folder written by `dashrag index`."),
    text: str | None = typer.Argument(None, help="The query."),
    queries: Path | None = typer.Option(None, help=(
        "A BEIR queries.jsonl: answer every query, each written as it completes.")),
    top_k: int | None = typer.Option(None, "--top-k", min=1, help="How many chunks (default: the tree's own top_k)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON lines."),
    trace: bool = typer.Option(False, "--trace", help="Print the trace tree."),
    fmt: str = typer.Option("text", "--format", help="text | json | trec (document-level TREC run)."),
    tag: str = typer.Option("dashrag", help="Run tag in TREC output."),
    store: str | None = typer.Option(
        None, help="SQLAlchemy URL of the store, for a tree indexed with --store (default: the store file in FOLDER)."
    ),
    filters: str | None = typer.Option(None, "--filter", help=(
        'A metadata filter as JSON, e.g. \'{"year": {"$gte": 2015}}\' (docs/filters.md).')),
) -> None:
    """Load a saved tree (no refitting) and answer one query or a queries file.

    With ``--queries`` every answer is written (and flushed) as soon as it is made, in
    the file's order: when a query fails part-way (an LLM backend that stops
    answering), the answers before it are already out, the error names the query, and
    the exit code is 2.
    """
    if fmt not in ("text", "json", "trec"):
        raise QueryError(f"--format must be text, json or trec, not {excerpt(fmt)}")
    fmt = "json" if as_json else fmt
    if queries is not None and text is None:
        pairs = _read_queries(queries)
    elif text is not None and queries is None:
        pairs = [("1", text)]
    else:
        raise QueryError("give either a query text or --queries FILE")
    restriction = None if filters is None else Restriction.where(filters)  # a bad filter: exit 2 before loading
    retriever = dashrag.load(folder, store_url=store)
    try:
        if queries is not None:
            answers = retriever.stream_batch([q for _, q in pairs], query_ids=[qid for qid, _ in pairs],
                                             top_k=top_k, restriction=restriction)
            for index, answer, node in answers:
                _write_answer(fmt, tag, trace, pairs[index], answer, node)
        else:
            chunks, node = retriever.retrieve(pairs[0][1], top_k=top_k, restriction=restriction)
            _write_answer(fmt, tag, trace, pairs[0], chunks, node)
    finally:
        retriever.close()  # engine connections, embedded Qdrant's storage lock


def _write_answer(fmt: str, tag: str, trace: bool, pair: tuple[str, str], chunks: Sequence[ScoredChunk],
                  node: dict) -> None:
    """One query's answer in the chosen format, flushed at once (a batch writes each as it completes)."""
    qid, text = pair
    if fmt == "trec":
        run = run_from_results({_trec_field(qid): chunks})
        fields = {q: {_trec_field(d): score for d, score in docs.items()} for q, docs in run.items()}
        sys.stdout.write(format_trec_run(fields, _trec_field(tag)))
    elif fmt == "json":
        print(results_json(text, chunks, node if trace else None))
    else:
        print_table(console, text, chunks)
        if trace:
            console.print(plain(format_trace(node), keep_lines=True), highlight=False)
    sys.stdout.flush()


def _trec_field(value: str) -> str:
    """A TREC run field is one whitespace-free token: whitespace and control characters made visible."""
    return visible(value).replace(" ", "\\x20")


register_eval_commands(app)  # eval and tune (dashrag/cli/eval_commands.py)
register_serve_command(app, user_errors)  # serve (dashrag/cli/serve.py)
register_pg_commands(app)  # pg start / stop / status (dashrag/cli/pg_commands.py)
register_finetune_commands(app)  # finetune embedding / reranker / pipeline (dashrag/cli/finetune_commands.py)
register_update_commands(app)  # add / remove documents of a saved tree (dashrag/cli/update_commands.py)
register_mcp_command(app)  # mcp (dashrag/cli/mcp_commands.py)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
