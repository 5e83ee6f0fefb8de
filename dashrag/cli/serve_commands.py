"""``dashrag serve``: the retrieval service on uvicorn (see docs/service.md).

Flags override the settings file, which overrides the ``RAG_*`` environment variables
(:func:`dashrag.service.settings.load_settings`); a flag left out changes nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

import typer

from dashrag.cli.console import user_errors

TREES_HELP = "Folder of saved trees; each sub-folder is a collection (RAG_TREES_DIR)."
SETTINGS_HELP = "A JSON or TOML settings file (the RAG_* names, lower case, without the prefix)."


app = typer.Typer()


@app.command()
@user_errors
def serve(
    trees: Path | None = typer.Option(None, "--trees", help=TREES_HELP),
    host: str | None = typer.Option(None, help="Address to listen on (RAG_HOST, default 127.0.0.1)."),
    port: int | None = typer.Option(None, help="Port (RAG_PORT, default 8051; 0 picks a free one)."),
    data_root: Path | None = typer.Option(None, "--data-root", help="POST /trees reads corpora under it."),
    settings: Path | None = typer.Option(None, "--settings", help=SETTINGS_HELP),
    reranker_url: str | None = typer.Option(None, "--reranker-url", help="TEI-style /rerank server."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", envvar="DASHRAG_CACHE_DIR",
                                             help="Embedding cache for builds."),
    log_level: str | None = typer.Option(None, "--log-level", help="DEBUG, INFO (default), WARNING."),
    qdrant: str | None = typer.Option(None, "--qdrant", help=(
        "Also serve the collections of this Qdrant directly: a server URL (or a qdrant-client local-mode "
        "folder; Qdrant Edge trees are served through --trees).")),
    qdrant_embedding: str | None = typer.Option(None, "--qdrant-embedding", help=(
        "The embedding component (JSON) that embeds queries for --qdrant (default MiniLMEmbedding).")),
    qdrant_collection: list[str] | None = typer.Option(None, "--qdrant-collection", help=(
        "Serve only this Qdrant collection (repeatable; default: all).")),
    qdrant_api_key_var: str | None = typer.Option(None, "--qdrant-api-key-var", help=(
        "Name of the env variable holding the Qdrant API key.")),
    allow_credential: list[str] | None = typer.Option(None, "--allow-credential", help=(
        "An env variable that tree configs sent over HTTP may name as a credential (repeatable; "
        "default none; docs/security.md).")),
    allow_endpoint: list[str] | None = typer.Option(None, "--allow-endpoint", help=(
        "A URL prefix that tree configs sent over HTTP may send requests to (repeatable; default none).")),
) -> None:
    """Serve POST /retrieve and the tree API over the saved trees in --trees (and Qdrant collections)."""
    import uvicorn

    from dashrag.core.config_json import loads_config
    from dashrag.errors import ConfigError
    from dashrag.service.app import create_app
    from dashrag.service.blas import limit_blas_threads
    from dashrag.service.interpreter import responsive_interpreter
    from dashrag.service.logs import configure_logging
    from dashrag.service.settings import load_settings

    embedding = loads_config(qdrant_embedding, "--qdrant-embedding") if qdrant_embedding else None
    resolved = load_settings(settings, trees_dir=trees, host=host, port=port, data_root=data_root,
                             reranker_url=reranker_url, cache_dir=cache_dir, log_level=log_level, qdrant=qdrant,
                             qdrant_embedding=embedding, qdrant_collections=qdrant_collection or None,
                             qdrant_api_key_var=qdrant_api_key_var, allow_credentials=allow_credential or None,
                             allow_endpoints=allow_endpoint or None)
    if resolved.trees_dir is not None and not resolved.trees_dir.is_dir():
        raise ConfigError(f"--trees {resolved.trees_dir}: no such folder")
    configure_logging(resolved.log_level, resolved.log_format)
    blas = limit_blas_threads(resolved.blas_threads)
    logging.getLogger("dashrag.service").info(
        "BLAS threads: %s", ", ".join(f"{name} {n}" for name, n in blas.items()) or "no BLAS library loaded")
    app = create_app(resolved)
    tuned = responsive_interpreter(resolved.switch_interval_ms)  # once the trees are loaded (service/interpreter.py)
    logging.getLogger("dashrag.service").info("switch interval %.2f ms; %d objects frozen",
                                              tuned["switch_interval_ms"], tuned["frozen_objects"])
    uvicorn.run(app, host=resolved.host, port=resolved.port, log_config=None,
                access_log=False, log_level=resolved.log_level.lower())
