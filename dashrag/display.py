"""Untrusted text made visible: control characters written out, never sent to a terminal raw.

Document text, queries, paths and ids come from files and command lines an attacker
may write. An escape sequence in them (``ESC ]`` OSC, ``ESC [`` CSI, the C1 control
U+009B) drives the terminal that prints it; a bidirectional override (U+202E)
reorders what a reader sees. :func:`visible` writes each such character out as
``\\x1b`` / ``\\u202e``, so it is shown, never acted on. Pure text, no Rich: the CLI
and the reports (dashrag.evaluation.report) share it.
"""

from __future__ import annotations

import re

#: C0 controls (newline and tab included: a cell or a line must stay one line), DEL, C1 controls,
#: and the Unicode bidirectional marks, overrides and isolates.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: The same, but line breaks and tabs stay (multi-line output: a trace, a log record).
UNSAFE_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _show(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, keep_lines: bool = False) -> str:
    """``text`` with every control character written out (``\\x1b``), so a terminal shows it, never runs it."""
    return (UNSAFE_KEEP_LINES if keep_lines else UNSAFE).sub(_show, str(text))
