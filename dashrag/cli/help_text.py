"""The help screens as a reader meets them: prose rewrapped, no ``<bool>`` on a flag, no RST markup.

typer (0.29) keeps every line break of a docstring's later paragraphs, so a paragraph
wrapped at 100 columns in the source breaks mid-sentence on an 80-column terminal; it
shows ``<bool>`` beside every flag (a flag takes no value); and it prints RST literals
(````--queries````) as they are. :func:`tidy_help` fixes all three on the click command tree
once, before it runs, so the commands keep ordinary docstrings.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

RST_LITERAL = re.compile(r"``([^`]+)``")


def prose(help_text: str) -> str:
    """Paragraphs joined into one line each (the terminal wraps them), RST literals as `single` backticks."""
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    return "\n\n".join(RST_LITERAL.sub(r"`\1`", " ".join(p.split())) for p in paragraphs)


def tidy_help(command: Any, ctx: Any) -> None:
    """Tidy ``command`` and every sub-command: help prose (see :func:`prose`) and untyped flags."""
    if getattr(command, "help", None):
        command.help = prose(command.help)
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # typer shows the metavar in place of the type: nothing for a flag
        if getattr(param, "help", None):
            param.help = prose(param.help)
    commands = getattr(command, "commands", {})
    loaded = commands.loaded() if hasattr(commands, "loaded") else commands  # a lazy table: what it imported
    for sub in loaded.values():
        tidy_help(sub, ctx)
