"""Reading a config tree from JSON text: strict JSON, bounded depth, one clear error.

Python's ``json`` accepts ``NaN``/``Infinity`` (not JSON) and turns ``1e400`` into
``inf``; a config holding either would build a tree whose every query returns
nothing. Both parse here and are refused by validation, which names the path of
every non-finite number wherever it sits (:func:`dashrag.core.validation.json_issues`).
A structure so deep that the parser recurses past Python's limit is a
:class:`~dashrag.errors.ConfigError`, not a RecursionError.

A key given twice in one object is refused (Python keeps the last one silently, so
``{"top_k": 5, "top_k": 50}`` would mean whatever the reader's parser picks).
:func:`strict_loads` is the one parser; the service also refuses non-finite numbers
with it (``finite=True``: an HTTP body is JSON, and ``NaN`` is not JSON).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dashrag.errors import ConfigError


class RefusedJSON(json.JSONDecodeError):
    """Well-formed text that strict JSON refuses (a key twice, NaN): the message says what, not where."""

    def __init__(self, msg: str):
        super().__init__(msg, "", 0)
        self.args = (msg,)

    def __str__(self) -> str:
        return self.msg


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key[:60]!r} appears twice in one object")
        found[key] = value
    return found


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} is too large for a finite number")
    return value


def strict_loads(text: str | bytes, finite: bool = False) -> Any:
    """JSON with no key twice in one object (and, with ``finite``, no NaN, Infinity or overflowing number);
    every refusal is a ``json.JSONDecodeError``."""
    extra: dict[str, Any] = {"parse_constant": _refuse_constant, "parse_float": _finite_float} if finite else {}
    try:
        return json.loads(text, object_pairs_hook=_one_value_per_key, **extra)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        raise RefusedJSON(str(exc)) from None


def loads_config(text: str, where: str) -> Any:
    """Parse ``text`` as strict JSON; ``where`` names its origin in the error."""
    try:
        return strict_loads(text)
    except RefusedJSON as exc:
        raise ConfigError(f"{where}: {exc.msg}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to be a config") from None


def read_config_file(path: Path, what: str) -> Any:
    """A JSON file holding a config (``what`` says which kind, for the error)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: {what} is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: {what} cannot be read ({exc.strerror})") from None
    return loads_config(text, str(path))
