"""The one route the web page needs beyond the service API: the ready-made trees of components/.

The page offers them in its JSON panel (load a preset, edit it in the forms). They are read
from the package's presets, as the CLI resolves preset names (dashrag.presets).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from dashrag.core.config_json import read_config_file
from dashrag.presets import preset_names, preset_path
from dashrag.service.routes import errors

router = APIRouter()  # create_app adds the bearer-token check when the service has one


@router.get("/presets", response_model=list[dict[str, Any]], responses=errors(401))
def presets() -> list[dict[str, Any]]:
    """``[{"name", "config"}]`` for every preset in components/, by name."""
    found = ((name, preset_path(name)) for name in preset_names())
    return [{"name": name, "config": read_config_file(path, "preset")} for name, path in found if path is not None]
