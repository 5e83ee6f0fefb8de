"""Reading a config tree from JSON text: strict JSON, bounded depth, one clear error.

Python's ``json`` accepts ``NaN``/``Infinity`` (not JSON) and turns ``1e400`` into
``inf``; a config holding either would build a tree whose every query returns
nothing. Both parse here and are refused by validation, which names the path of
every non-finite number wherever it sits (:func:`dashrag.core.validation.json_issues`).
A structure so deep that the parser recurses past Python's limit is a
:class:`~dashrag.errors.ConfigError`, not a RecursionError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dashrag.errors import ConfigError


def loads_config(text: str, where: str) -> Any:
    """Parse ``text`` as strict JSON; ``where`` names its origin in the error."""
    try:
        return json.loads(text)
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
