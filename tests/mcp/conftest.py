"""MCP fixtures: two saved trees (keyword on examples/corpus, whole-document keyword on SciFact's first 400)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dashrag
from tests.conftest import EXAMPLE_CORPUS, REPO

KEYWORD = json.loads((REPO / "components" / "keyword.json").read_text())


@pytest.fixture(scope="session")
def mcp_trees(tmp_path_factory, scifact_subset_file) -> Path:
    trees = tmp_path_factory.mktemp("mcp-trees")
    work = tmp_path_factory.mktemp("mcp-work")
    dashrag.build(KEYWORD, EXAMPLE_CORPUS, work / "kw").save(trees / "kw")
    dashrag.build(KEYWORD, scifact_subset_file, work / "scifact",
                  chunker={"component": "WholeDocumentChunker", "params": {}}).save(trees / "scifact")
    return trees
