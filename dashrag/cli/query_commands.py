"""``dashrag query``: load a saved tree (never refitted) and answer one query or a BEIR queries file.

A cold keyword query is latency-bound (bench/bench_cold_query.py), so this module imports
only what every query needs; the TREC writer, the trace formatter, the filter language and
the config reader are imported by the options that use them
(tests/cli/test_cold_query_imports.py).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dashrag.cli.console import user_errors
from dashrag.cli.output import print_table, results_json
from dashrag.cli.safe_text import plain
from dashrag.core.collection import young_garbage_only
from dashrag.display import visible
from dashrag.errors import ConfigError, CorpusError, QueryError, excerpt

if TYPE_CHECKING:
    from dashrag.core.restriction import Restriction
    from dashrag.documents.model import ScoredChunk

log = logging.getLogger(__name__)
app = typer.Typer()


def read_queries(path: Path) -> list[tuple[str, str]]:
    """A BEIR queries.jsonl: one ``{"_id", "text"}`` per line, ids unique (a TREC run is keyed by them)."""
    from dashrag.core.config_json import loads_config

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
            from dashrag.documents.corpus import refuse_lone_surrogates

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
        pairs = read_queries(queries)
    elif text is not None and queries is None:
        pairs = [("1", text)]
    else:
        raise QueryError("give either a query text or --queries FILE")
    restriction = None if filters is None else _restriction(filters)  # a bad filter: exit 2 before loading
    with young_garbage_only():  # what the imports and the load make lives as long as the command (core/collection.py)
        from dashrag.core.saved_tree import load  # dashrag.load without dashrag.api's build and update imports

        retriever = load(folder, store_url=store)
    try:
        warnings = [] if restriction is None else restriction.warnings(retriever.require_infra().chunks)
        for warning in warnings:  # a "warning: ..." line on stderr each (console.user_errors)
            log.warning("%s", warning)
        if queries is not None:
            answers = retriever.stream_batch([q for _, q in pairs], query_ids=[qid for qid, _ in pairs],
                                             top_k=top_k, restriction=restriction)
            for number, answer, node in answers:
                write_answer(fmt, tag, trace, pairs[number], answer, node, warnings)
        else:
            chunks, node = retriever.retrieve(pairs[0][1], top_k=top_k, restriction=restriction)
            write_answer(fmt, tag, trace, pairs[0], chunks, node, warnings)
    finally:
        retriever.close()  # engine connections, embedded Qdrant's storage lock


def _restriction(filters: str) -> Restriction:
    """The ``--filter`` JSON parsed (the filter language is imported only when a filter is given)."""
    from dashrag.core.restriction import Restriction

    return Restriction.where(filters)


def write_answer(fmt: str, tag: str, trace: bool, pair: tuple[str, str], chunks: Sequence[ScoredChunk],
                 node: dict, warnings: Sequence[str] = ()) -> None:
    """One query's answer in the chosen format, flushed at once (a batch writes each as it completes)."""
    qid, text = pair
    if fmt == "trec":
        from dashrag.evaluation.runs import format_trec_run, run_from_results

        run = run_from_results({trec_field(qid): chunks})
        fields = {q: {trec_field(d): score for d, score in docs.items()} for q, docs in run.items()}
        sys.stdout.write(format_trec_run(fields, trec_field(tag)))
    elif fmt == "json":
        print(results_json(text, chunks, node if trace else None, warnings))
    else:
        from dashrag.cli.console import console

        print_table(console, text, chunks)
        if trace:
            from dashrag.core.trace import format_trace

            console.print(plain(format_trace(node), keep_lines=True), highlight=False)
    sys.stdout.flush()


def trec_field(value: str) -> str:
    """A TREC run field is one whitespace-free token: whitespace and control characters made visible."""
    return visible(value).replace(" ", "\\x20")
