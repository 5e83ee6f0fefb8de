"""Text from data or users, printed safely by the CLI (Rich side of :mod:`dashrag.display`).

Printed as a markup string, ``[/b]`` in a document is Rich markup (it made a query
crash) and ``[link=…]`` becomes a hyperlink. So everything the CLI prints that came
from outside is a Rich :class:`Text` (never parsed as markup) of the
:func:`~dashrag.display.visible` form (control characters written out).
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING

from dashrag.display import visible

if TYPE_CHECKING:  # rich is imported by what prints through it: `query --json` prints JSON only
    from rich.text import Text

#: C1 controls, DEL and bidi marks, which ``json.dumps(ensure_ascii=False)`` leaves raw (it escapes C0 itself).
JSON_RAW_CONTROLS = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def plain(text: object, style: str = "", keep_lines: bool = False) -> Text:
    """A Rich Text of ``text`` made visible: printed as it is, never read as markup."""
    from rich.text import Text

    return Text(visible(text, keep_lines), style=style)


def markup_safe(text: object) -> str:
    """``text`` made visible and markup-escaped, for a place that takes a markup string (a table title)."""
    from rich.markup import escape

    return escape(visible(text))


def json_line(payload: object, indent: int | None = None) -> str:
    """JSON for a pipe (one line unless ``indent``), with C1 controls and bidi marks escaped as well."""
    text = json.dumps(payload, ensure_ascii=False, indent=indent)
    return JSON_RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class VisibleFormatter(logging.Formatter):
    """A log formatter whose lines cannot carry terminal escapes (a logged path may come from a corpus)."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record), keep_lines=True)
