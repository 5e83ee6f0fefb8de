"""``dashrag add`` and ``dashrag remove``: change a saved tree's documents in place (docs/updating.md).

Both call :func:`dashrag.api.update_tree` (the one update path every face shares) and print
how many documents were added, replaced, skipped and removed; a bad request (an unknown id,
a folder that holds no saved tree, another chunker) is one ``error:`` line, exit 2, and the
folder is left as it was.
"""

from __future__ import annotations

import logging
from pathlib import Path

import typer

from dashrag.cli.config_files import resolve_component
from dashrag.cli.console import console, say, user_errors
from dashrag.cli.index_commands import STRICT_HELP
from dashrag.cli.progress_lines import shown_progress
from dashrag.core.persistence import cleanup_warnings
from dashrag.documents.changes import UpdateReport
from dashrag.errors import ConfigError, CorpusError

logger = logging.getLogger(__name__)


def _say_report(folder: Path, report: UpdateReport, warned: list[str]) -> None:
    """The counts on stdout; a save that published but left the old files behind, as ``warning:`` lines."""
    for warning in warned:
        logger.warning(warning)
    counts = report.counts()
    verdict = "updated" if report.changed else "unchanged"
    say(f"{verdict} {folder}: " + ", ".join(f"{n} {what}" for what, n in counts.items()))


def _read_ids(path: Path) -> list[str]:
    """One document id per line (blank lines ignored)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such ids file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


PURGE_HELP = ("Write the tree's store file whole, so no text of a removed or replaced document, this time's or an "
              "earlier update's, stays in the folder (slower: ~2 s a GB of store). Without it a removed document is "
              "hidden and its text leaves at the store's next compaction (docs/updating.md, \"Removed text\").")
STORE_HELP = ("SQLAlchemy URL of the store, for a tree indexed with --store (default: the store file in TREE); "
              "the database changes in one transaction (docs/updating.md).")

app = typer.Typer()


@app.command("add")
@user_errors
def add(
    tree: Path = typer.Argument(..., help="A folder written by `dashrag index`."),
    corpus: Path = typer.Option(..., "--corpus", help="Documents to add: a folder, a JSONL file or a BEIR folder."),
    chunker: str | None = typer.Option(None, help=(
        "The tree's chunker, a name or JSON (checked against the one it was built with; needed only for "
        "trees saved before dashrag recorded it).")),
    follow_symlinks: bool = typer.Option(False, "--follow-symlinks",
                                         help="Read files that symbolic links in a corpus folder point to."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    store: str | None = typer.Option(None, "--store", help=STORE_HELP),
    purge: bool = typer.Option(False, "--purge", help=PURGE_HELP),
) -> None:
    """Add documents to a saved tree: new ids are added, changed ones replaced, identical ones skipped."""
    from dashrag.api import update_tree
    from dashrag.documents.corpus import Corpus

    documents = Corpus.from_path(corpus, follow_symlinks=follow_symlinks, strict=strict)
    say(documents.summary())
    with shown_progress(console, "updating the tree") as progress, cleanup_warnings() as warned:
        report = update_tree(tree, add=documents, chunker=resolve_component(chunker), progress=progress,
                             store_url=store, purge=purge)
    _say_report(tree, report, warned)

@app.command("remove")
@user_errors
def remove(
    tree: Path = typer.Argument(..., help="A folder written by `dashrag index`."),
    ids: list[str] = typer.Argument(None, help="Document ids to remove."),
    ids_file: Path | None = typer.Option(None, "--ids", help="A file of document ids, one per line."),
    store: str | None = typer.Option(None, "--store", help=STORE_HELP),
    purge: bool = typer.Option(False, "--purge", help=PURGE_HELP),
) -> None:
    """Remove documents from a saved tree by id (an unknown id changes nothing)."""
    from dashrag.api import update_tree

    wanted = list(ids or []) + (_read_ids(ids_file) if ids_file is not None else [])
    if not wanted:
        raise ConfigError("name the documents to remove: dashrag remove TREE ID... or --ids FILE")
    with shown_progress(console, "updating the tree") as progress, cleanup_warnings() as warned:
        report = update_tree(tree, remove=wanted, progress=progress, store_url=store, purge=purge)
    _say_report(tree, report, warned)


def recorded_folder(tree: Path) -> Path:
    """The folder ``dashrag sync TREE`` reads when given none: the one the tree's build recorded (absolute, from
    ``dashrag index``). One a service recorded is relative to its data root, which this command does not know:
    an error, never a guess (a sync of the wrong folder would remove every document whose file is not in it)."""
    from dashrag.api import source_folder_of

    recorded = source_folder_of(tree)
    if recorded is None:
        raise CorpusError(f"{tree}: the tree records no folder of files it was built from (built from JSONL, "
                          "uploaded files, or before dashrag recorded it): name the folder, dashrag sync TREE FOLDER")
    if not Path(recorded).is_absolute():
        raise CorpusError(f"{tree}: the tree records the folder {recorded!r} relative to the data root of the "
                          "service that built it: name the folder, dashrag sync TREE FOLDER")
    return Path(recorded)


@app.command("sync")
@user_errors
def sync(
    tree: Path = typer.Argument(..., help="A folder written by `dashrag index` from a folder of files."),
    folder: Path | None = typer.Argument(None, help=(
        "The folder of files to bring the tree in line with (default: the folder the tree was built from).")),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be added, replaced and removed; "
                                 "read and write nothing."),
    strict: bool = typer.Option(False, "--strict", help=(
        "A new or changed file that cannot be read is an error (exit 2, the tree unchanged).")),
    follow_symlinks: bool = typer.Option(False, "--follow-symlinks",
                                         help="Read files that symbolic links in the folder point to."),
    store: str | None = typer.Option(None, "--store", help=STORE_HELP),
    purge: bool = typer.Option(False, "--purge", help=PURGE_HELP),
) -> None:
    """Keep a tree in sync with a folder: new files added, changed ones (by content hash) replaced, gone ones
    removed (docs/documents.md)."""
    from dashrag.api import sync_tree

    if folder is None:
        folder = recorded_folder(tree)
        say(f"folder: {folder} (the folder {tree} was built from)")
    with console.status("syncing the tree"):
        report = sync_tree(tree, folder, dry_run=dry_run, strict=strict, follow_symlinks=follow_symlinks,
                           store_url=store, purge=purge)
    plan = report.plan
    if dry_run:
        for verb, paths in (("add", plan.added), ("replace", plan.changed), ("remove", plan.removed)):
            for path in paths:
                say(f"would {verb} {path}")
        say(f"plan for {tree}: {len(plan.added)} to add, {len(plan.changed)} to replace, {len(plan.removed)} "
            f"to remove, {len(plan.unchanged)} unchanged (nothing written)")
        return
    assert report.update is not None
    verdict = "updated" if report.update.changed else "unchanged"
    say(f"{verdict} {tree}: " + ", ".join(f"{n} {what}" for what, n in report.counts().items()))
