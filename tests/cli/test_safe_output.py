"""Text from documents, queries, paths and ids never acts on the terminal: no markup, no escape sequences."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dashrag.display import visible
from tests.cli.conftest import error_line, invoke

OSC_52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # sets the clipboard on many terminals
CSI_CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b31m"
HOSTILE = f"[/b] [link=https://evil.example]click[/link] [bold red]x {OSC_52}{CSI_CLEAR}{C1_CSI} \u202eevil"
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    corpus = root / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(record) for record in [
        {"_id": f"doc{OSC_52}[/b]", "text": f"rank fusion of result lists {HOSTILE}"},
        {"_id": "plain", "text": "chunk overlap and windows"},
    ]) + "\n")
    out = root / "idx"
    result = invoke("index", '{"component": "TFIDFRetriever"}', "--corpus", corpus, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def assert_inert(text: str) -> None:
    assert not any(c in text for c in RAW_CONTROLS), repr(text)


def test_a_document_with_markup_and_escapes_is_printed_as_text(hostile_index):
    result = invoke("query", hostile_index, "rank fusion")
    assert result.exit_code == 0, result.output
    assert_inert(result.output)
    assert "[/b]" in result.output and "[link=https://evil.example]" in result.output  # shown, not applied
    assert "\\x1b]52" in result.output


def test_a_query_with_markup_and_escapes_is_printed_as_text(hostile_index):
    result = invoke("query", hostile_index, f"rank fusion {HOSTILE}")
    assert result.exit_code == 0, result.output
    assert_inert(result.output)
    assert "[bold red]" in result.output


def test_the_trace_shows_document_ids_as_text(hostile_index):
    result = invoke("query", hostile_index, "rank fusion", "--trace")
    assert result.exit_code == 0, result.output
    assert_inert(result.output)


def test_json_output_escapes_every_control_character(hostile_index):
    result = invoke("query", hostile_index, "rank fusion", "--json")
    assert_inert(result.output)
    payload = json.loads(result.output)
    assert HOSTILE in payload["results"][0]["text"]  # the data itself is intact, only escaped


def test_a_trec_run_keeps_one_token_per_field(hostile_index, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"_id": f"q 1{CSI_CLEAR}", "text": "rank fusion"}) + "\n")
    result = invoke("query", hostile_index, "--queries", queries, "--format", "trec")
    assert_inert(result.output)
    assert all(len(line.split()) == 6 for line in result.output.splitlines())


def test_an_error_naming_a_hostile_path_is_one_inert_line(tmp_path):
    folder = tmp_path / f"no[/b]{OSC_52}\nsaved"
    line = error_line(invoke("query", folder, "anything"))
    assert_inert(line) and "[/b]" in line


@pytest.mark.slow
def test_the_installed_command_prints_hostile_text_inertly(hostile_index):
    # the console script as a user runs it, in a real process (no test runner in between)
    result = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "query", str(hostile_index), "rank fusion"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout + result.stderr)


def test_visible_writes_controls_out_and_leaves_text_alone():
    assert visible("a\x1b[31mb\u202ec\td") == "a\\x1b[31mb\\u202ec\\x09d"
    assert visible("line\nnext", keep_lines=True) == "line\nnext"
    assert visible("Zürich — ok") == "Zürich — ok"
