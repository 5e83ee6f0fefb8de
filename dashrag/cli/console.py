"""What every command module of the CLI shares: the consoles and the user-error wrapper.

Every user error (a config, a corpus, a saved folder, a query) is a DashragError:
it is printed as one ``error: ...`` line on stderr with exit code 2, never as a
traceback. Anything else is a bug and keeps its traceback. Living apart from
``main.py``, this lets command modules (``eval_commands.py``) be imported by
``main.py`` without importing it back.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from dashrag.errors import DashragError

console = Console()
err_console = Console(stderr=True)
EXIT_USER_ERROR = 2


def user_errors(command: Callable) -> Callable:
    @wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
        try:
            return command(*args, **kwargs)
        except DashragError as exc:
            # escaped: the message may quote a server's or a file's text, which is not markup
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_USER_ERROR) from None

    return run
