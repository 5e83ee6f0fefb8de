"""Resolving the CONFIG argument of the CLI: a JSON file, or the name of a preset in components/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dashrag.errors import ConfigError

PRESETS_DIR = Path(__file__).resolve().parents[2] / "components"


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.json"))


def read_json_file(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: {what} is not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def resolve_config(arg: str) -> dict[str, Any]:
    """``arg`` is a path to a JSON file, a preset name, or inline JSON (starting with ``{``)."""
    if arg.lstrip().startswith("{"):
        try:
            return json.loads(arg)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"inline config: malformed JSON at column {exc.colno}: {exc.msg}") from None
    path = Path(arg)
    if path.is_file():
        return read_json_file(path, "config")
    preset = PRESETS_DIR / f"{arg}.json"
    if preset.is_file():
        return read_json_file(preset, "preset")
    raise ConfigError(f"{arg!r} is neither a JSON file nor a preset (presets: {', '.join(preset_names()) or 'none'})")


def resolve_component(arg: str | None) -> dict[str, Any] | None:
    """A component given on the command line: a registered name, or a JSON object."""
    if arg is None:
        return None
    if arg.lstrip().startswith("{") or Path(arg).is_file():
        return resolve_config(arg)
    return {"component": arg, "params": {}}
