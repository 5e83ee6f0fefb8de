"""How the CLI prints results: a table for people, JSON for programs, TREC runs for evaluation.

Queries, document ids and chunk text come from users and corpora: the table shows
them through :mod:`dashrag.cli.safe_text` (never as markup, control characters
visible), JSON escapes every control character.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from dashrag.cli.safe_text import json_line, markup_safe, plain

if TYPE_CHECKING:  # rich is imported by the table, not by JSON output
    from rich.console import Console

    from dashrag.documents.model import ScoredChunk


def print_table(console: Console, query: str, chunks: Sequence[ScoredChunk], width: int = 90) -> None:
    """The hits as a table; a ``from`` column (path, page, section: where the text is in the user's files) when
    any hit has one of them, and a ``metadata`` column (the document's and the chunk's, as JSON) when any hit has
    metadata."""
    from rich.table import Table

    table = Table(title=f"“{markup_safe(query)}”", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("document#pos")
    table.add_column("text")
    with_origin = any(origin(c.chunk.all_metadata) for c in chunks)
    if with_origin:
        table.add_column("from")
    with_metadata = any(c.chunk.all_metadata for c in chunks)
    if with_metadata:
        table.add_column("metadata")
    for rank, c in enumerate(chunks, 1):
        snippet = " ".join(c.chunk.text.split())
        snippet = snippet if len(snippet) <= width else snippet[: width - 1] + "…"
        fields = c.chunk.all_metadata
        where = [plain(origin(fields))] if with_origin else []
        metadata = [plain(json_line(dict(fields)) if fields else "")] if with_metadata else []
        table.add_row(str(rank), f"{c.score:.4f}", plain(f"{c.document_id}#{c.chunk.position}"), plain(snippet),
                      *where, *metadata)
    console.print(table)


def origin(metadata: Mapping[str, Any]) -> str:
    """Where a hit's text is, for a person: ``report.pdf, p. 3, Methods › Sampling`` (the parts it has)."""
    parts = [str(metadata["path"])] if isinstance(metadata.get("path"), str) else []
    if isinstance(metadata.get("page"), int):
        parts.append(f"p. {metadata['page']}")
    if isinstance(metadata.get("section"), str):
        parts.append(metadata["section"])
    return ", ".join(parts)


def print_rows(console: Console, title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain table (documents, fields): every cell shown as text, never as markup."""
    from rich.table import Table

    table = Table(title=plain(title))
    for header in headers:
        table.add_column(header)
    for row in rows:
        table.add_row(*(plain(cell) for cell in row))
    console.print(table)


def results_json(query: str, chunks: Sequence[ScoredChunk], trace: dict | None, warnings: Sequence[str] = ()) -> str:
    """One answer as a JSON line; ``warnings``: what the user must hear although the query is valid (a filter's
    field that no document has), always present so a program need not guess."""
    payload: dict[str, Any] = {"query": query, "results": [c.to_json(include_metadata=True) for c in chunks],
                               "warnings": list(warnings)}
    if trace is not None:
        payload["trace"] = trace
    return json_line(payload)
