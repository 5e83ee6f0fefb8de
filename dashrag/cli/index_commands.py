"""``dashrag index``: chunk a corpus, build and fit a tree, save it (the body is :func:`dashrag.api.build_tree`).

Every config problem is found before any work (``construct_tree``); the output folder is
checked before the corpus is read; an existing tree is replaced only with ``--overwrite``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from dashrag.cli.config_files import resolve_component, resolve_config
from dashrag.cli.console import console, say, user_errors
from dashrag.cli.paths import check_output_folder, create_output_folder
from dashrag.cli.progress_lines import shown_progress

app = typer.Typer()

STRICT_HELP = ("A file of the corpus folder that cannot be read, or a line of its metadata.jsonl that names no "
               "file of the folder, is an error (exit 2, nothing written), not a warning.")


@app.command()
@user_errors
def index(
    config: str = typer.Argument(..., help="A JSON file, a preset name from components/, or inline JSON."),
    corpus: Path = typer.Option(
        ..., "--corpus", help=(
            "A folder of files (.txt, .md, .pdf, .docx, .html: docs/documents.md), or a BEIR corpus.jsonl[.gz] "
            "or folder.")
    ),
    out: Path = typer.Option(..., "--out", help="Folder to save the built retriever in."),
    chunker: str | None = typer.Option(
        None, help="A chunker name or JSON (default: StructureChunker 2000/200: pages and sections, then by size)."
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
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
) -> None:
    """Chunk a corpus, store it, build and fit the tree, and save it."""
    import dashrag
    from dashrag.api import build_tree, construct_tree
    from dashrag.documents.corpus import is_folder_of_files
    from dashrag.store.store import Store

    raw = resolve_config(config)
    root = construct_tree(raw)  # every config problem before any work; the build validates no more
    chunker_spec = resolve_component(chunker)
    if chunker_spec is not None:
        dashrag.validate_and_transform(chunker_spec, "chunker")
    check_output_folder(out, "--out", overwrite)
    if store is not None:
        Store(store, read_only=True).close()  # a missing driver or a malformed URL, before any work
    with shown_progress(console, "reading the corpus"):
        documents = dashrag.Corpus.from_path(corpus, follow_symlinks=follow_symlinks, strict=strict)
    say(documents.summary())
    created = not out.exists()
    create_output_folder(out, "--out")
    source = corpus.resolve() if is_folder_of_files(corpus) else None  # what `dashrag sync TREE` reads
    with shown_progress(console, "building") as progress:
        try:
            report = build_tree(root, documents, out, name=config if not config.lstrip().startswith("{") else None,
                                chunker=chunker_spec, store_url=store, cache_dir=cache_dir, overwrite=overwrite,
                                progress=progress, source_folder=source)
        except BaseException:
            if created:  # a failed build leaves no --out where there was none
                shutil.rmtree(out, ignore_errors=True)
            raise
    say(f"indexed {report.chunks} chunks in {report.seconds:.1f}s; saved to {out}")  # one copyable line, never wrapped
