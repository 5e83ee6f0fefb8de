"""What every command module of the CLI shares: the consoles and the user-error wrapper.

Every user error (a config, a corpus, a saved folder, a query) is a DashragError:
it is printed as one ``error: ...`` line on stderr with exit code 2, never as a
traceback (usage errors too: :mod:`dashrag.cli.usage`). Anything else is a bug and
keeps its traceback. Warnings are ``warning: ...`` lines; both show control
characters as text (:mod:`dashrag.cli.safe_text`). Living apart from ``main.py``,
this lets command modules (``eval_commands.py``) be imported by ``main.py``
without importing it back.
"""

from __future__ import annotations

import errno
import logging
import re
import sys
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

import typer

from dashrag.cli.safe_text import VisibleFormatter, plain
from dashrag.cli.usage import EXIT_USER_ERROR, print_error
from dashrag.errors import DashragError
from dashrag.extras import missing_extra

#: A disk that is full (or a file size or quota limit reached), mounted read-only, or a file or folder that may
#: not be changed (immutable, no permission) is the user's to fix: one ``error:`` line, not a traceback. The
#: writes themselves are atomic, so nothing half-written is left.
FULL = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
READ_ONLY = frozenset({errno.EROFS, errno.EPERM, errno.EACCES})
#: numpy's message for a write the file system took short of (``tofile``/``save`` on a full disk): no errno.
SHORT_WRITE = re.compile(r"^\d+ requested and \d+ written$")

if TYPE_CHECKING:
    from rich.console import Console

    console: Console
    err_console: Console

_CONSOLES: dict[str, Console] = {}


def __getattr__(name: str) -> Any:
    """``console`` (stdout) and ``err_console`` (stderr), made on first use: rich is imported by the commands
    that print through it, so `dashrag query --json` (JSON on stdout) never imports it."""
    if name not in ("console", "err_console"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _CONSOLES:
        from rich.console import Console

        _CONSOLES[name] = Console(stderr=name == "err_console")
    return _CONSOLES[name]

__all__ = ["EXIT_USER_ERROR", "console", "err_console", "say", "user_errors"]


def say(text: object) -> None:
    """One line of a command's own output on stdout: never read as markup, control characters shown as text,
    never wrapped (a path or URL stays one copyable line)."""
    __getattr__("console").print(plain(text), highlight=False, soft_wrap=True)


def write_problem(exc: OSError) -> str | None:
    """The ``error:`` line of a write the machine refused (full, read-only, immutable), or None for a bug."""
    where = f"{exc.filename}: " if exc.filename else ""
    if exc.errno in FULL or (exc.errno is None and SHORT_WRITE.match(str(exc))):
        reason = exc.strerror or "a write was cut short"
        return f"{where}cannot be written ({reason}); free some space or write elsewhere"
    if exc.errno in READ_ONLY:
        return f"{where}cannot be written ({exc.strerror}): the file or folder is read-only or immutable"
    return None


def user_errors(command: Callable) -> Callable:
    """Run a command with warnings as ``warning: ...`` lines on stderr, and every DashragError as one
    ``error: ...`` line and exit 2; the handler is removed afterwards (no state left for the next command)."""

    @wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        root = logging.getLogger()
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(VisibleFormatter("warning: %(message)s"))
        handler.setLevel(logging.WARNING)
        root.addHandler(handler)
        level = root.level
        root.setLevel(min(level, logging.WARNING) if level else logging.WARNING)
        try:
            return command(*args, **kwargs)
        except DashragError as exc:
            print_error(str(exc))
            raise typer.Exit(EXIT_USER_ERROR) from None
        except ImportError as exc:  # an optional library missing deep inside a build or a query
            needs = missing_extra(exc, f"dashrag {command.__name__.replace('_', '-')}")
            if needs is None:
                raise  # a library dashrag always has: a bug, with its traceback
            print_error(str(needs))
            raise typer.Exit(EXIT_USER_ERROR) from None
        except OSError as exc:
            problem = write_problem(exc)
            if problem is None:
                raise  # anything else is a bug: its traceback
            print_error(problem)
            raise typer.Exit(EXIT_USER_ERROR) from None
        finally:
            root.removeHandler(handler)
            root.setLevel(level)

    return run
