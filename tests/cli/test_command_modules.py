"""The command groups as importable modules: main.py's table names what each module provides, and a command
runs with only its own group imported (a real process, as a user runs it)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
import typer

from dashrag.cli.command_modules import CommandModule, LazyCommands
from dashrag.cli.main import COMMANDS, app
from tests.cli.conftest import invoke
from tests.conftest import EXAMPLE_CORPUS, REPO


@pytest.mark.parametrize("entry", COMMANDS, ids=lambda entry: entry.module.rsplit(".", 1)[-1])
def test_each_listed_module_provides_exactly_the_names_main_lists(entry):
    assert set(entry.commands()) == set(entry.names)


def test_the_assembled_command_has_every_listed_name_in_the_listed_order():
    listed = [name for entry in COMMANDS for name in entry.names]
    assert list(typer.main.get_command(app).commands) == listed


def test_a_module_that_provides_other_names_than_listed_is_refused_naming_both():
    with pytest.raises(RuntimeError, match=r"dashrag.cli.query_commands provides \['query'\], main.py lists"):
        CommandModule("dashrag.cli.query_commands", ("ask",)).commands()


def test_reading_one_name_imports_only_its_module():
    table = LazyCommands([CommandModule("dashrag.cli.pg_commands", ("pg",)),
                          CommandModule("dashrag.cli.no_such_commands", ("ghost",))])
    assert list(table) == ["pg", "ghost"] and "ghost" in table
    assert table["pg"].name == "pg"
    assert list(table.loaded()) == ["pg"]  # the missing module was never imported
    with pytest.raises(KeyError):
        table["absent"]


DRIVER = """
import json, sys
from dashrag.cli.main import app
try:
    app(sys.argv[2:], prog_name="dashrag")
except SystemExit:
    pass
with open(sys.argv[1], "w") as out:
    json.dump(sorted(m for m in sys.modules if m.startswith("dashrag.cli.")), out)
"""


@pytest.mark.slow
def test_dashrag_query_imports_no_other_command_module(tmp_path):
    tree = tmp_path / "tree"  # built in this process: only the query needs a fresh one
    built = invoke("index", "keyword", "--corpus", EXAMPLE_CORPUS, "--out", tree)
    assert built.exit_code == 0, built.output
    report = tmp_path / "modules.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    answered = subprocess.run([sys.executable, "-c", DRIVER, str(report), "query", str(tree), "rank fusion", "--json"],
                              capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert json.loads(answered.stdout)["results"], answered.stderr
    command_modules = {m for m in json.loads(report.read_text()) if m.endswith("_commands")}
    assert command_modules == {"dashrag.cli.query_commands"}


def test_every_command_module_has_an_app_of_its_own():
    for entry in COMMANDS:
        assert isinstance(importlib.import_module(entry.module).app, typer.Typer), entry.module
