"""``dashrag.cli.schema_commands`` driven alone (its own typer app, no main.py)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dashrag.cli import schema_commands
from dashrag.core.registry import all_components


def run(*args: str):
    return CliRunner().invoke(schema_commands.app, list(args))


def test_components_alone_lists_every_registered_component():
    result = run("components")
    assert result.exit_code == 0, result.output
    names = {line.split()[0] for line in result.stdout.splitlines() if line.strip()}
    assert {name[:28] for name, _ in all_components()} <= names


def test_schema_alone_prints_the_component_json_schema():
    result = run("schema", "BM25Retriever")
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    assert schema["x-component"] == "BM25Retriever" and "k1" in schema["properties"]


def test_schema_alone_of_an_unknown_name_is_one_error_line_exit_2():
    result = run("schema", "NoSuchRetriever")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: component: unknown component 'NoSuchRetriever'")
