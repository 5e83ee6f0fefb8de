"""``dashrag.cli.index_commands`` driven alone: a tree is built and saved, and loads."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

import dashrag
from dashrag.cli import index_commands
from tests.cli.conftest import error_line, invoke
from tests.conftest import EXAMPLE_CORPUS


def test_index_alone_saves_a_tree_that_answers(tmp_path):
    out = tmp_path / "tree"
    result = CliRunner().invoke(index_commands.app, ["keyword", "--corpus", str(EXAMPLE_CORPUS), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith("indexed ")
    chunks, _ = dashrag.load(out).retrieve("rank fusion")
    assert chunks


def test_index_alone_refuses_a_saved_tree_without_overwrite(tmp_path):
    out = tmp_path / "tree"
    args = ["keyword", "--corpus", str(EXAMPLE_CORPUS), "--out", str(out)]
    assert CliRunner().invoke(index_commands.app, args).exit_code == 0
    again = CliRunner().invoke(index_commands.app, args)
    assert again.exit_code == 2 and again.stderr.startswith("error: ") and "--overwrite" in again.stderr


def folder_with_a_stray_metadata_line(tmp_path):
    """The shipped corpus with a metadata.jsonl whose second line names a file the folder lacks."""
    folder = tmp_path / "notes"
    shutil.copytree(EXAMPLE_CORPUS, folder)
    (folder / "metadata.jsonl").write_text('{"file": "bm25.md", "metadata": {"year": 2024}}\n'
                                           '{"file": "bm52.md", "metadata": {"year": 2023}}\n', encoding="utf-8")
    return folder


def test_a_metadata_line_naming_no_document_is_one_warning_line_and_the_tree_is_built(tmp_path):
    folder = folder_with_a_stray_metadata_line(tmp_path)
    result = invoke("index", "keyword", "--corpus", folder, "--out", tmp_path / "tree")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [f"warning: {folder / 'metadata.jsonl'}:2: names 'bm52.md', which is not a document "
                        f"of {folder}; its metadata is not used"]
    assert "skipped 1," in result.stdout


def test_strict_makes_a_metadata_line_naming_no_document_an_error_and_writes_nothing(tmp_path):
    folder = folder_with_a_stray_metadata_line(tmp_path)
    out = tmp_path / "tree"
    line = error_line(invoke("index", "keyword", "--corpus", folder, "--out", out, "--strict"))
    assert "(--strict)" in line and "metadata.jsonl:2: names 'bm52.md'" in line
    assert not out.exists()


@pytest.mark.slow
def test_index_reads_a_folder_of_every_format_and_names_each_bad_file(tmp_path, monkeypatch):
    import json

    from tests.cli.conftest import invoke
    from tests.documents.test_folder import make_bad_files, make_good_folder
    from tests.fixtures.documents import html_page, write_pptx

    folder = tmp_path / "docs"
    folder.mkdir()
    make_good_folder(folder)
    make_bad_files(folder)
    write_pptx(folder / "deck.pptx", [("Okapi BM25", ["term saturation"]), ("Fusion", ["reciprocal rank fusion"])])
    sentence = "Le caf\u00e9 est une boisson tr\u00e8s r\u00e9pandue, pr\u00e9par\u00e9e \u00e0 partir de graines."
    latin = html_page("Caf\u00e9", [sentence, sentence]).replace('charset="utf-8"', 'charset="x-no-such-encoding"')
    (folder / "latin.html").write_bytes(latin.encode("latin-1"))  # an encoding no one declares: read from its bytes
    out = tmp_path / "idx"
    monkeypatch.setenv("DASHRAG_MAX_UNPACKED_MB", "2")  # the bomb unpacks to 3 MiB
    result = invoke("index", "keyword", "--corpus", folder, "--out", out)
    assert result.exit_code == 0, result.output
    assert "read 7 documents, skipped 1, failed 5" in result.stdout
    warnings = result.stderr.splitlines()
    for name in ("locked.pdf", "scan.pdf", "broken.pdf", "broken.docx", "bomb.docx", "photo.jpg"):
        assert sum(name in line for line in warnings) == 1, (name, result.stderr)
    assert "bomb.docx: unpacks to 3 MiB, more than the cap of 2 MiB" in result.stderr
    cafe = json.loads(invoke("query", out, "boisson graines", "--json").stdout)["results"][0]
    assert (cafe["document_id"], cafe["metadata"]["file_type"]) == ("latin.html", "html")
    assert "Le caf\u00e9 est une boisson" in cafe["text"]
    slide = json.loads(invoke("query", out, "reciprocal rank fusion", "--json").stdout)["results"][0]
    assert (slide["document_id"], slide["metadata"]["page"], slide["metadata"]["section"]) == ("deck.pptx", 2, "Fusion")
    hits = invoke("query", out, "okapi ranking", "--json")
    assert hits.exit_code == 0, hits.output
    best = json.loads(hits.stdout)["results"][0]
    assert best["document_id"] == "report.pdf"
    assert best["metadata"]["file_type"] == "pdf" and best["metadata"]["title"] == "Q3"


@pytest.mark.slow
def test_index_strict_refuses_a_folder_with_a_bad_file_and_writes_nothing(tmp_path):
    from tests.cli.conftest import invoke
    from tests.documents.test_folder import make_good_folder

    folder = tmp_path / "docs"
    folder.mkdir()
    make_good_folder(folder)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 nothing more")
    out = tmp_path / "idx"
    result = invoke("index", "keyword", "--corpus", folder, "--out", out, "--strict")
    warning, line = result.stderr.splitlines()  # the file's own line, then the one error line
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert warning.startswith("warning: failed ") and "broken.pdf: not a readable PDF" in warning
    assert line.startswith("error: 1 file(s) could not be read (--strict)") and "broken.pdf" in line
    assert not out.exists()
