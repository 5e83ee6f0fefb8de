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

import typer
from typer.core import TyperGroup

from dashrag.cli.help_text import tidy_help
from dashrag.display import visible

try:  # typer >= 0.22 carries its own click; its errors derive from TyperException
    from typer import TyperException as CommandLineError
except ImportError:  # pragma: no cover - an older typer raises click's own exceptions
    from click import ClickException as CommandLineError  # type: ignore[assignment]

EXIT_USER_ERROR = 2


def print_error(message: str) -> None:
    """One ``error: ...`` line on stderr; the message is shown as text, never as markup or escapes."""
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, soft_wrap=True).print(Text.assemble(("error: ", "red"), visible(message)), highlight=False)


class OneLineErrors(TyperGroup):
    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, windows_expand_args: bool = True,
             **extra: Any) -> Any:
        tidy_help(self, self.context_class(self))
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False,
                                  windows_expand_args=windows_expand_args, **extra)
        except CommandLineError as exc:
            ctx = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare ``dashrag``: the help, once
                if exc.format_message():  # rich help is printed as the error is made and leaves "" here
                    typer.echo(exc.format_message())
                result = 0
            else:
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None and exc.exit_code == 2 else ""
                print_error(exc.format_message() + hint)
                result = exc.exit_code
        except typer.Abort:
            print_error("aborted")
            result = 1
        code = result if isinstance(result, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code
