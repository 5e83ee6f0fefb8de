"""MCP fixtures: three saved trees (keyword on examples/corpus, whole-document keyword on SciFact's first 400,
keyword on a folder of a PDF and a DOCX the fixture writes: hits with a page and a section)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dashrag
from tests.conftest import EXAMPLE_CORPUS, REPO
from tests.fixtures.documents import write_docx, write_pdf

KEYWORD = json.loads((REPO / "components" / "keyword.json").read_text())


@pytest.fixture(scope="session")
def mcp_trees(tmp_path_factory, scifact_subset_file) -> Path:
    trees = tmp_path_factory.mktemp("mcp-trees")
    work = tmp_path_factory.mktemp("mcp-work")
    dashrag.build(KEYWORD, EXAMPLE_CORPUS, work / "kw").save(trees / "kw")
    dashrag.build(KEYWORD, scifact_subset_file, work / "scifact",
                  chunker={"component": "WholeDocumentChunker", "params": {}}).save(trees / "scifact")
    files = work / "files"
    files.mkdir()
    write_pdf(files / "report.pdf", [["Okapi ranking"], ["fusion of rankings"], ["zebrafish were sampled"],
                                     ["zebrafish tanks on page four"]])
    write_docx(files / "notes.docx", [("h1", "Methods"), ("h2", "Sampling"), ("p", "zebrafish sampled at random")])
    dashrag.build_tree(KEYWORD, files, trees / "files")
    return trees
