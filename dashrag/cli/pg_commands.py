"""``dashrag pg start|stop|status``: a local PostgreSQL server with pgvector, on loopback.

The work is in ``dashrag/engines/local_postgres.py``; this module only maps it to commands.
"""

from __future__ import annotations

from pathlib import Path

import typer

from dashrag.cli.console import say, user_errors

app = typer.Typer(name="pg", no_args_is_help=True, help="A local PostgreSQL server with pgvector (127.0.0.1 only).")


@app.command("start")
@user_errors
def start(data: Path = typer.Option(..., "--data", help="Data folder (created and initialised if new)."),
          port: int | None = typer.Option(None, "--port", min=1, max=65535,
                                          help="Port on 127.0.0.1 (default: a free one).")) -> None:
    """Start (initialising if needed) a PostgreSQL server on 127.0.0.1 and print its URL."""
    from dashrag.engines.local_postgres import start as start_server

    server = start_server(data, port)
    say(server.url)

@app.command("stop")
@user_errors
def stop(data: Path = typer.Option(..., "--data", help="The data folder given to `dashrag pg start`.")) -> None:
    """Stop the server of a data folder."""
    from dashrag.engines.local_postgres import stop as stop_server

    stopped = stop_server(data)
    say(f"stopped the PostgreSQL server of {data}" if stopped else f"no server was running for {data}")

@app.command("status")
@user_errors
def status(data: Path = typer.Option(..., "--data", help="The data folder given to `dashrag pg start`.")) -> None:
    """Print the URL of the server of a data folder if it runs (exit 1 otherwise)."""
    from dashrag.engines.local_postgres import status as server_status

    server = server_status(data)
    if server is None:
        say(f"no server is running for {data}")
        raise typer.Exit(1)
    say(server.url)

