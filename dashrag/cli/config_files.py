"""Resolving the CONFIG argument of the CLI: a JSON file, the name of a preset in components/, or inline JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dashrag.core.config_json import loads_config, read_config_file
from dashrag.errors import ConfigError, excerpt
from dashrag.presets import preset_names, preset_path


def resolve_config(arg: str) -> dict[str, Any]:
    """``arg`` is a path to a JSON file, a preset name, or inline JSON (starting with ``{``)."""
    if arg.lstrip().startswith("{"):
        return loads_config(arg, "inline config")
    path = Path(arg)
    if path.is_file():
        return read_config_file(path, "config")
    preset = preset_path(arg)
    if preset is not None:
        return read_config_file(preset, "preset")
    presets = ", ".join(preset_names()) or "none"
    raise ConfigError(f"{excerpt(arg)} is neither a JSON file nor a preset (presets: {presets})")


def resolve_component(arg: str | None) -> dict[str, Any] | None:
    """A component given on the command line: a registered name, or a JSON object."""
    if arg is None:
        return None
    if arg.lstrip().startswith("{") or Path(arg).is_file():
        return resolve_config(arg)
    return {"component": arg, "params": {}}
