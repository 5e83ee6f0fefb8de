"""The help screens and listings as a newcomer meets them on an 80-column terminal (a real process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from dashrag.cli.main import app
from dashrag.core.registry import all_components
from tests.conftest import REPO

WIDTH = 80
ENTRY_POINT = Path(sys.executable).parent / "dashrag"  # the installed command, as a user runs it


def dashrag(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(WIDTH), "TERM": "dumb"}
    return subprocess.run([str(ENTRY_POINT), *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=300)


def command_paths(group=None, prefix=()) -> list[tuple[str, ...]]:
    group = group or typer.main.get_command(app)
    paths = []
    for name, command in group.commands.items():
        paths.append((*prefix, name))
        if hasattr(command, "commands"):
            paths += command_paths(command, (*prefix, name))
    return paths


def description(help_screen: str) -> list[str]:
    """The prose lines between the usage line and the first panel."""
    lines = help_screen.splitlines()
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next(i for i, line in enumerate(lines) if line.startswith("╭"))
    return [line.strip() for line in lines[start:end]]


def test_dashrag_alone_prints_its_help_once():
    result = dashrag()
    assert result.returncode == 0 and result.stdout.count("Usage: dashrag") == 1, result.stdout


# Every command's help screen from one process on the same 80-column terminal: the screens are the ones each
# ``dashrag <command> --help`` prints (compared byte for byte when this replaced a process per command, which cost
# half a second of CPU each; docs/testing.md); the installed command itself is run by the tests around this one.
HELP_SCREENS = """
import contextlib, io, json, sys
from dashrag.cli.main import app
screens = {}
for path in json.loads(sys.argv[1]):
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        try:
            app([*path, "--help"], prog_name="dashrag")
        except SystemExit as exit:
            code = exit.code
    screens[" ".join(path)] = [code or 0, shown.getvalue()]
json.dump(screens, sys.__stdout__)
"""


@pytest.fixture(scope="module")
def help_screens() -> dict[str, list]:
    """``{"command path": [exit code, help screen]}`` for every command, rendered in one real process."""
    env = {**os.environ, "COLUMNS": str(WIDTH), "TERM": "dumb"}
    shown = subprocess.run([sys.executable, "-c", HELP_SCREENS, json.dumps(command_paths())], capture_output=True,
                           text=True, env=env, cwd=REPO, timeout=300)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_no_help_screen_tags_a_flag_with_a_type(path, help_screens):
    code, screen = help_screens[" ".join(path)]
    assert code == 0, screen
    assert "Usage: dashrag " + " ".join(path) in screen  # the command's own screen, not a parent's
    assert "<bool>" not in screen and "``" not in screen


def test_query_help_wraps_its_paragraphs_at_the_terminal_not_mid_sentence():
    lines = description(dashrag("query", "--help").stdout)
    prose = [line for line in lines if line]
    assert any("`--queries`" in line for line in prose)
    for line, after in zip(lines, lines[1:]):
        if line and after:  # a line followed by more of its paragraph was filled to near the width
            assert len(line) > WIDTH - 20, lines


@pytest.mark.slow
def test_components_is_a_table_that_fits_80_columns():
    out = dashrag("components").stdout
    lines = out.splitlines()
    assert all(len(line) <= WIDTH for line in lines)
    header = next(line for line in lines if line.strip())
    assert header.split() == ["component", "kind", "description"]
    kind_column = header.index("kind")
    for name, cls in all_components():
        row = next(line for line in lines if line.startswith(f" {name[:28]} "))
        assert row[kind_column:].split()[0] == cls.META.kind


@pytest.mark.slow
def test_schema_of_a_name_begun_suggests_the_component():
    result = dashrag("schema", "BM25")
    assert result.returncode == 2
    assert result.stderr.startswith("error: component: unknown component 'BM25'; did you mean 'BM25Retriever'")
