"""``dashrag components``, ``dashrag schema`` and ``dashrag export-schemas``: what the registry holds.

jsonschema is imported by the commands that use it (the schema module), not by this module.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from dashrag.cli.console import console, user_errors
from dashrag.cli.safe_text import json_line, plain
from dashrag.core.registry import all_components, get_component
from dashrag.display import visible

app = typer.Typer()


@app.command()
@user_errors
def components() -> None:
    """List the registered components with their kind and description."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
    table.add_column("component", style="bold", overflow="fold", max_width=28)  # one name has 42 characters
    table.add_column("kind", style="dim", no_wrap=True)
    table.add_column("description", overflow="fold")
    for name, cls in all_components():
        table.add_row(Text(visible(name)), Text(cls.META.kind), Text(visible(cls.META.display["en"].description)))
    console.print(table)


@app.command()
@user_errors
def schema(name: str) -> None:
    """Print the JSON Schema of one component."""
    from dashrag.core.schema import component_schema

    print(json_line(component_schema(get_component(name)), indent=2))


@app.command("export-schemas")
@user_errors
def export_schemas_command(
    root: Path = typer.Option(Path("."), help="Folder that holds schemas/ and frontend_meta/ (the checkout)."),
) -> None:
    """Regenerate schemas/ and frontend_meta/ from the code."""
    from dashrag.core.schema import export_schemas

    written = export_schemas(root)
    console.print(plain(f"wrote {len(written)} files under {root}/schemas and {root}/frontend_meta"), highlight=False)
