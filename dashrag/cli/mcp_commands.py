"""``dashrag mcp``: the saved trees as Model Context Protocol tools over stdio (docs/mcp.md).

A desktop client (or an agent framework) starts it as a subprocess and speaks JSON-RPC on its
stdin and stdout, so nothing else may print to stdout: logs go to stderr. The SDK is the
``mcp`` extra, imported when the command runs.
"""

from __future__ import annotations

from pathlib import Path

import typer

from dashrag.cli.console import user_errors
from dashrag.errors import ConfigError

app = typer.Typer()


@app.command("mcp")
@user_errors
def mcp(trees: Path = typer.Option(..., "--trees", help="Folder of saved trees; each sub-folder is one.")) -> None:
    """Serve the saved trees in --trees as MCP tools over stdio (retrieve, list_trees, explain, ...)."""
    if not trees.is_dir():
        raise ConfigError(f"--trees {trees}: no such folder")
    try:
        from dashrag.mcp.server import mcp_server
    except ModuleNotFoundError as exc:
        raise ConfigError(f"dashrag mcp needs the mcp extra: pip install 'dashrag[mcp]' ({exc})") from None
    from dashrag.service.collections import CollectionRegistry

    registry = CollectionRegistry(trees)
    registry.load_all()
    mcp_server(registry).run("stdio")
