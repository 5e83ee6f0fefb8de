"""The ``dashrag`` command.

Every command is wrapped in ``user_errors`` (cli/console.py): a DashragError is one
``error: ...`` line on stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import typer

import dashrag
from dashrag.cli.config_files import resolve_component, resolve_config
from dashrag.cli.console import console, user_errors
from dashrag.cli.eval_commands import register_eval_commands
from dashrag.cli.output import print_table, results_json
from dashrag.core.registry import all_components, get_component
from dashrag.core.schema import component_schema, export_schemas
from dashrag.core.trace import format_trace
from dashrag.documents.model import ScoredChunk
from dashrag.errors import QueryError
from dashrag.evaluation.runs import format_trec_run, run_from_results
from dashrag.store.store import Store

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Retriever trees from JSON.")
REPO_ROOT = Path(__file__).resolve().parents[2]


@app.command()
@user_errors
def components() -> None:
    """List the registered components with their kind and description."""
    for name, cls in all_components():
        console.print(
            f"[bold]{name}[/bold]  [dim]{cls.META.kind}[/dim]  {cls.META.display['en'].description}", highlight=False
        )


@app.command()
@user_errors
def schema(name: str) -> None:
    """Print the JSON Schema of one component."""
    print(json.dumps(component_schema(get_component(name)), indent=2, ensure_ascii=False))


@app.command("export-schemas")
@user_errors
def export_schemas_command(
    root: Path = typer.Option(REPO_ROOT, help="Folder that holds schemas/ and frontend_meta/."),
) -> None:
    """Regenerate schemas/ and frontend_meta/ from the code."""
    written = export_schemas(root)
    console.print(f"wrote {len(written)} files under {root}/schemas and {root}/frontend_meta")


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
) -> None:
    """Chunk a corpus, store it, build and fit the tree, and save it."""
    raw = resolve_config(config)
    dashrag.validate_and_transform(raw, "retriever")  # every config problem before any work
    with console.status("reading the corpus"):
        documents = dashrag.Corpus.from_path(corpus)
    console.print(
        f"read {len(documents)} documents" + (f" (skipped {len(documents.skipped)})" if documents.skipped else "")
    )
    start = time.perf_counter()
    with console.status("chunking, storing and fitting"):
        retriever = dashrag.build(
            raw, documents, out, chunker=resolve_component(chunker), store_url=store, cache_dir=cache_dir
        )
    built = time.perf_counter() - start
    with console.status("saving"):
        retriever.save(out)
    infra = retriever.require_infra()
    assert infra.store_url is not None  # dashrag.build always writes the corpus to a store
    record_store = Store(infra.store_url)
    record_id = record_store.add_retriever_record(
        config if not config.lstrip().startswith("{") else raw["component"],
        retriever.to_config(),
        str(out.resolve()),
        infra.chunks.fingerprint,
    )
    record_store.close()
    retriever.set_id(record_id)
    console.print(f"indexed {len(retriever.require_infra().chunks)} chunks in {built:.1f}s; saved to {out}")


def _read_queries(path: Path) -> list[tuple[str, str]]:
    queries = []
    if not path.is_file():
        raise QueryError(f"{path}: no such queries file")
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            queries.append((str(record["_id"]), record["text"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            raise QueryError(f"{path}:{number}: expected a JSON object with '_id' and 'text'") from None
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
) -> None:
    """Load a saved tree (no refitting) and answer one query or a queries file.

    With ``--queries`` every answer is written (and flushed) as soon as it is made, in
    the file's order: when a query fails part-way (an LLM backend that stops
    answering), the answers before it are already out, the error names the query, and
    the exit code is 2.
    """
    if fmt not in ("text", "json", "trec"):
        raise QueryError(f"--format must be text, json or trec, not {fmt!r}")
    fmt = "json" if as_json else fmt
    if queries is not None and text is None:
        pairs = _read_queries(queries)
    elif text is not None and queries is None:
        pairs = [("1", text)]
    else:
        raise QueryError("give either a query text or --queries FILE")
    retriever = dashrag.load(folder)
    kwargs = {} if top_k is None else {"top_k": top_k}
    if queries is not None:
        answers = retriever.stream_batch([q for _, q in pairs], query_ids=[qid for qid, _ in pairs], **kwargs)
        for index, chunks, node in answers:
            _write_answer(fmt, tag, trace, pairs[index], chunks, node)
    else:
        chunks, node = retriever.retrieve(pairs[0][1], **kwargs)
        _write_answer(fmt, tag, trace, pairs[0], chunks, node)


def _write_answer(fmt: str, tag: str, trace: bool, pair: tuple[str, str], chunks: list[ScoredChunk],
                  node: dict) -> None:
    """One query's answer in the chosen format, flushed at once (a batch writes each as it completes)."""
    qid, text = pair
    if fmt == "trec":
        sys.stdout.write(format_trec_run(run_from_results({qid: chunks}), tag))
    elif fmt == "json":
        print(results_json(text, chunks, node if trace else None))
    else:
        print_table(console, text, chunks)
        if trace:
            console.print(format_trace(node), highlight=False)
    sys.stdout.flush()


register_eval_commands(app)  # eval and tune (dashrag/cli/eval_commands.py)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
