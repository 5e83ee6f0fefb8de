"""Usage errors (a missing option, an unknown flag, a bad value) as one ``error:`` line, exit 2.

typer's default prints a boxed, coloured panel with the usage text; the rest of the
CLI promises one ``error: ...`` line on stderr for every user error, and scripts
read that line. :class:`OneLineErrors` runs click in non-standalone mode and prints
click's own message through :func:`dashrag.cli.safe_text.visible` (an argument may
hold terminal escapes).
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

import click
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from dashrag.display import visible

EXIT_USER_ERROR = 2


def print_error(message: str) -> None:
    """One ``error: ...`` line on stderr; the message is shown as text, never as markup or escapes."""
    Console(stderr=True, soft_wrap=True).print(Text.assemble(("error: ", "red"), visible(message)), highlight=False)


class OneLineErrors(TyperGroup):
    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help())
            result = 0
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            print_error(exc.format_message() + hint)
            result = EXIT_USER_ERROR
        except click.ClickException as exc:
            print_error(exc.format_message())
            result = exc.exit_code
        except click.Abort:
            print_error("aborted")
            result = 1
        code = result if isinstance(result, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code
