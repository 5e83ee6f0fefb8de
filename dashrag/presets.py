"""The ready-made trees, by name (``keyword``, ``hybrid``, ...).

They are package data (``dashrag/preset_trees/``), so an installed wheel has them as the
checkout does; the checkout's top-level ``components/`` is a link to that folder, one copy
for both (tests/test_wheel.py guards it). A preset name is a plain file stem (letters,
digits, ``_``, ``-``): a name that could reach outside that folder (``../x``, an absolute
path) is never a preset, so neither the CLI nor :func:`dashrag.build` reads a file the user did not name as one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dashrag.core.config_json import read_config_file
from dashrag.errors import ConfigError, excerpt

PRESETS_DIR = Path(__file__).resolve().parent / "preset_trees"
PRESET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.json") if PRESET_NAME.fullmatch(p.stem))


def preset_path(name: str) -> Path | None:
    """The preset file called ``name``, or None when there is none (or ``name`` cannot be one)."""
    if not PRESET_NAME.fullmatch(name):
        return None
    path = PRESETS_DIR / f"{name}.json"
    return path if path.is_file() else None


def load_preset(name: str) -> dict[str, Any]:
    """The config of preset ``name``; a ConfigError listing the presets when there is none."""
    path = preset_path(name)
    if path is None:
        raise ConfigError(f"{excerpt(name)} is not a preset (presets: {', '.join(preset_names()) or 'none'})")
    return read_config_file(path, "preset")
