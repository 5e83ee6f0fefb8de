"""``dashrag documents`` and ``dashrag fields`` as a user meets them, on a folder with a metadata.jsonl."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli.conftest import error_line, invoke
from tests.conftest import EXAMPLE_CORPUS, folder_digest

SIDECAR = [{"file": "bm25.md", "metadata": {"year": 2024, "tags": ["sparse", "bm25"]}},
           {"file": "chunking.txt", "metadata": {"year": 2019, "published": "2019-02-01"}}]


#: What every file of a folder gives its document (docs/documents.md), beside the sidecar's fields.
FILE_FIELDS = {"path", "file_type", "title", "modified", "sha256"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("documents_cli")
    shutil.copytree(EXAMPLE_CORPUS, root / "notes")
    (root / "notes" / "metadata.jsonl").write_text("".join(json.dumps(line) + "\n" for line in SIDECAR))
    result = invoke("index", "keyword", "--corpus", root / "notes", "--out", root / "tree")
    assert result.exit_code == 0, result.output
    return root / "tree"


def test_documents_json_lists_every_document_with_its_title_and_metadata(tree):
    result = invoke("documents", tree, "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 8 and rows[0]["id"] == "bm25.md" and rows[0]["title"] == ""
    given = {row["id"]: {k: v for k, v in row["metadata"].items() if k not in FILE_FIELDS} for row in rows}
    assert given["bm25.md"] == SIDECAR[0]["metadata"] and given["dense_retrieval.md"] == {}
    assert rows[0]["metadata"]["path"] == "bm25.md" and rows[0]["metadata"]["file_type"] == "md"


def test_documents_as_a_table_shows_ids_and_metadata(tree):
    result = invoke("documents", tree)
    assert result.exit_code == 0 and "8 documents" in result.stdout
    assert "chunking.txt" in result.stdout and '"published": "2019-02-01"' in result.stdout


def test_fields_lists_each_field_with_types_counts_and_values(tree):
    result = invoke("fields", tree, "--json")
    assert result.exit_code == 0, result.output
    fields = [json.loads(line) for line in result.stdout.splitlines()]
    assert {f["name"] for f in fields if f["documents"] == 8} == FILE_FIELDS  # every file gives them
    assert [f for f in fields if f["name"] not in FILE_FIELDS] == [
        {"name": "published", "types": ["date"], "documents": 1, "values": ["2019-02-01"]},
        {"name": "section", "types": ["string"], "documents": 5,  # the chunks' own: five Markdown files' headings
         "values": ["BM25", "Dense retrieval", "Hybrid search and rank fusion", "Reranking",
                    "Tokenization, stop words and stemming"]},
        {"name": "tags", "types": ["list", "string"], "documents": 1, "values": ["sparse", "bm25"]},
        {"name": "year", "types": ["number"], "documents": 2, "values": [2024, 2019]}]


def test_fields_of_a_tree_without_metadata_says_so(tmp_path):
    out = tmp_path / "tree"
    (tmp_path / "corpus.jsonl").write_text('{"_id": "a", "text": "rank fusion"}\n', encoding="utf-8")
    assert invoke("index", "keyword", "--corpus", tmp_path / "corpus.jsonl", "--out", out).exit_code == 0
    result = invoke("fields", out)
    assert result.exit_code == 0 and "no document has metadata" in result.stdout


def test_documents_of_a_folder_that_is_no_tree_is_one_error_line(tmp_path):
    assert "no such saved retriever folder" in error_line(invoke("documents", tmp_path / "nope"))


def test_listing_writes_nothing(tree):
    before = folder_digest(tree)
    assert invoke("fields", tree).exit_code == 0 and invoke("documents", tree).exit_code == 0
    assert folder_digest(tree) == before


def test_the_query_table_shows_each_hits_metadata(tree):
    result = invoke("query", tree, "BM25 term saturation", "--top-k", "1")
    assert result.exit_code == 0, result.output
    assert "metadata" in result.stdout and '"year": 2024' in result.stdout
