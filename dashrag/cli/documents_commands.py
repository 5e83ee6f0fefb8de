"""``dashrag documents`` and ``dashrag fields``: what a saved tree holds, read from its store without loading the tree.

A user filtering their own folder needs the field names, their types and a few values before writing
``--filter`` (issue 39: ``{"yaer": 2024}`` answered nothing without a word); ``documents`` lists each
document's id, title and metadata. Both read the store read-only: no model is loaded, nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dashrag.cli.console import console, say, user_errors
from dashrag.cli.output import print_rows
from dashrag.cli.safe_text import json_line

if TYPE_CHECKING:
    from dashrag.documents.model import SourceDocument

PAGE = 1000  # documents read per query of the store
FOLDER = typer.Argument(..., help="A folder written by `dashrag index`.")
STORE = typer.Option(None, help="SQLAlchemy URL of the store, for a tree indexed with --store.")

app = typer.Typer()


def _documents(folder: Path, store_url: str | None) -> Iterator[SourceDocument]:
    """The tree's documents (no text) in corpus order, a page of the store at a time."""
    from dashrag.core.saved_tree import saved_store_url
    from dashrag.store.store import Store

    store = Store(saved_store_url(folder, store_url), read_only=True)
    try:
        offset, total = 0, 1
        while offset < total:
            total, page = store.document_page(offset, PAGE)
            yield from page
            offset += PAGE
    finally:
        store.close()


def _chunk_fields(folder: Path, store_url: str | None) -> list[tuple[str, dict]]:
    """The chunks' own fields (page, section) with their documents' ids."""
    from dashrag.core.saved_tree import saved_store_url
    from dashrag.store.store import Store

    store = Store(saved_store_url(folder, store_url), read_only=True)
    try:
        return store.chunk_fields()
    finally:
        store.close()


@app.command()
@user_errors
def documents(folder: Path = FOLDER, as_json: bool = typer.Option(False, "--json", help="Print JSON lines."),
              store: str | None = STORE) -> None:
    """List a saved tree's documents: id, title and metadata (one JSON line each with --json)."""
    rows = [{"id": d.id, "title": d.title, "metadata": dict(d.metadata)} for d in _documents(folder, store)]
    if as_json:
        for row in rows:
            say(json_line(row))
        return
    print_rows(console, f"{len(rows)} documents in {folder}", ("id", "title", "metadata"),
               [(row["id"], row["title"], json_line(row["metadata"]) if row["metadata"] else "") for row in rows])


@app.command()
@user_errors
def fields(folder: Path = FOLDER, as_json: bool = typer.Option(False, "--json", help="Print JSON lines."),
           store: str | None = STORE) -> None:
    """List the metadata fields a --filter can use: each with its types, how many documents have it and its
    most frequent values (one JSON line each with --json)."""
    from dashrag.filters.fields import field_summaries

    summaries = field_summaries([document.metadata for document in _documents(folder, store)],
                                chunk_fields=_chunk_fields(folder, store))
    if as_json:
        for field in summaries:
            say(json_line(field))
    elif not summaries:
        say(f"{folder}: no document has metadata (docs/filters.md says how to give it)")
    else:
        print_rows(console, f"metadata fields of {folder}", ("field", "types", "documents", "values"),
                   [(f["name"], ", ".join(f["types"]), f["documents"], ", ".join(json_line(v) for v in f["values"]))
                    for f in summaries])
