"""The ``dashrag`` command: the command modules, assembled.

Each group of commands is a module of its own (``dashrag/cli/<group>_commands.py``, an
``app`` of module-level typer commands; see :mod:`dashrag.cli.command_modules`), listed
below with the names it provides; a module is imported when one of its commands runs, so
``dashrag query`` loads no other command's dependencies. To add a command, write its
module and add one line to :data:`COMMANDS`.

Every command is wrapped in ``user_errors`` (cli/console.py): a DashragError is one
``error: ...`` line on stderr with exit code 2, never a traceback; so is a usage error
(:mod:`dashrag.cli.usage`). Everything printed that came from data or the user goes
through :mod:`dashrag.cli.safe_text` (no markup, no terminal escapes).
"""

from __future__ import annotations

import os

# pydantic looks for plugins by reading the metadata of every installed distribution, about 10 ms of a
# 0.37 s cold query (docs/performance.md); the command uses none. A PYDANTIC_DISABLE_PLUGINS already set
# (even empty: every plugin) is kept.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

import typer  # noqa: E402  (after the variable: pydantic may be imported with it)

from dashrag.cli.command_modules import CommandModule, LazyGroup

COMMANDS = [  # in the order `dashrag --help` lists them
    CommandModule("dashrag.cli.schema_commands", ("components", "schema", "export-schemas")),
    CommandModule("dashrag.cli.index_commands", ("index",)),
    CommandModule("dashrag.cli.query_commands", ("query",)),
    CommandModule("dashrag.cli.eval_commands", ("eval", "tune")),
    CommandModule("dashrag.cli.serve_commands", ("serve",)),
    CommandModule("dashrag.cli.update_commands", ("add", "remove", "sync")),
    CommandModule("dashrag.cli.documents_commands", ("documents", "fields")),
    CommandModule("dashrag.cli.mcp_commands", ("mcp",)),
    CommandModule("dashrag.cli.pg_commands", ("pg",)),
    CommandModule("dashrag.cli.finetune_commands", ("finetune",)),
    CommandModule("dashrag.cli.rerank_commands", ("rerank", "rerank-candidates")),
]


class DashragCommands(LazyGroup):
    modules = COMMANDS


app = typer.Typer(add_completion=False, no_args_is_help=True, help="Retriever trees from JSON.",
                  cls=DashragCommands, pretty_exceptions_enable=False)


@app.callback()
def dashrag_group() -> None:
    """Retriever trees from JSON."""


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
