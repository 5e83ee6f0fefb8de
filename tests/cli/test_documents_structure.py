"""Where an answer came from, as a CLI user meets it: each hit of a folder's tree shows its file's ``path``, the
PDF ``page`` its text starts on and its ``section`` (heading path), in ``--json`` and in the table; all three
filter; a save, a load, a sync and an update keep them exact (a synced tree answers as a fresh index)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.cli.conftest import invoke
from tests.fixtures.documents import html_page, write_docx, write_pdf, write_pptx

QUERIES = ["okapi saturation", "sampled mice", "fusion of rankings", "page three zebrafish", "results tables"]


def make_folder(folder: Path) -> Path:
    folder.mkdir()
    write_pdf(folder / "report.pdf", [["Okapi ranking", "term saturation"], ["page two: fusion of rankings"],
                                      ["page three: zebrafish were sampled"]], title="Report")
    write_docx(folder / "notes.docx", [("h1", "Methods"), ("h2", "Sampling"), ("p", "we sampled mice at random"),
                                       ("h2", "Results"), ("p", "results in tables of counts")])
    (folder / "guide.md").write_text("# Guide\n\nokapi weights\n\n## Fusion\n\nreciprocal rank fusion of rankings",
                                     encoding="utf-8")
    (folder / "page.html").write_text(html_page("Zebrafish care", ["zebrafish tanks are cleaned weekly"],
                                                heading="Feeding"), encoding="utf-8")
    return folder


def hits(tree: Path, query: str, *options: str) -> list[dict]:
    result = invoke("query", tree, query, "--json", "--top-k", "20", *options)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["results"]


def where(hit: dict) -> tuple:
    metadata = hit["metadata"]
    return metadata["path"], metadata.get("page"), metadata.get("section")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("structure")
    out = root / "tree"
    result = invoke("index", "keyword", "--corpus", make_folder(root / "docs"), "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_json_hits_show_path_page_and_section(tree):
    assert where(hits(tree, "zebrafish were sampled")[0]) == ("report.pdf", 3, None)
    assert where(hits(tree, "sampled mice")[0]) == ("notes.docx", None, "Methods › Sampling")
    assert where(hits(tree, "reciprocal rank")[0]) == ("guide.md", None, "Guide › Fusion")
    assert where(hits(tree, "tanks cleaned weekly")[0]) == ("page.html", None, "Zebrafish care")
    first = hits(tree, "zebrafish were sampled")[0]
    assert first["metadata"]["file_type"] == "pdf" and first["metadata"]["pages"] == 3  # the document's, too


def table_columns(table: str) -> dict[str, str]:
    """A one-row rich table's cells by header, each cell's wrapped lines joined again."""
    lines = [line.strip("│┃").split("│" if "│" in line else "┃") for line in table.splitlines()
             if line.startswith(("│", "┃"))]
    headers, rows = [h.strip() for h in lines[0]], lines[1:]
    return {h: " ".join(" ".join(row[i].split()) for row in rows).strip() for i, h in enumerate(headers)}


def test_the_table_has_a_from_column(tree):
    result = invoke("query", tree, "zebrafish were sampled", "--top-k", "1")
    assert result.exit_code == 0, result.output
    assert table_columns(result.stdout)["from"] == "report.pdf, p. 3"


def test_page_section_and_file_type_filter_each_chunk(tree):
    assert {where(h) for h in hits(tree, "zebrafish sampled", "--filter", '{"page": {"$lte": 2}}')} <= {
        ("report.pdf", 1, None), ("report.pdf", 2, None)}
    found = hits(tree, "zebrafish sampled", "--filter", '{"$and": [{"file_type": "pdf"}, {"page": 3}]}')
    assert [where(h) for h in found] == [("report.pdf", 3, None)]
    found = hits(tree, "results mice okapi", "--filter", '{"section": {"$in": ["Methods › Results"]}}')
    assert [where(h) for h in found] == [("notes.docx", None, "Methods › Results")]
    assert all(h["metadata"]["file_type"] == "pdf"
               for h in hits(tree, "okapi fusion zebrafish", "--filter", '{"file_type": "pdf"}'))
    # a chunk of the same document but another page is left out, not its whole document
    assert {h["metadata"].get("page") for h in hits(tree, "okapi fusion zebrafish",
                                                     "--filter", '{"$not": {"page": 2}}')} >= {1, 3}


def answers(tree: Path) -> list:
    return [[(h["document_id"], h["position"], round(h["score"], 5), where(h)) for h in hits(tree, q)]
            for q in QUERIES] + [[where(h) for h in hits(tree, "okapi fusion", "--filter", '{"page": 1}')]]


@pytest.mark.slow  # two indexes and a sync of a folder of converted files: about 10 s here
def test_a_synced_tree_answers_as_a_fresh_index_pages_and_sections_included(tmp_path):
    folder = make_folder(tmp_path / "docs")
    tree = tmp_path / "tree"
    assert invoke("index", "keyword", "--corpus", folder, "--out", tree).exit_code == 0
    write_pdf(folder / "report.pdf", [["Okapi ranking"], ["a new page two: results tables"], ["fusion of rankings"],
                                      ["page four: zebrafish"]], title="Report")
    write_docx(folder / "new.docx", [("h1", "Okapi"), ("h2", "Saturation"), ("p", "okapi saturation of terms")])
    (folder / "guide.md").unlink()
    result = invoke("sync", tree, folder)
    assert result.exit_code == 0, result.output
    fresh = tmp_path / "fresh"
    assert invoke("index", "keyword", "--corpus", folder, "--out", fresh).exit_code == 0
    assert answers(tree) == answers(fresh)
    assert where(hits(tree, "page four zebrafish")[0]) == ("report.pdf", 4, None)


def test_a_store_older_than_chunk_fields_takes_them_on_its_next_update(tmp_path):
    """A tree whose store has no ``fields`` column (saved before chunks had their own fields): it loads, and
    adding a structured file adds the column with the new chunks' fields."""
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "plain.txt").write_text("okapi saturation in plain text", encoding="utf-8")
    tree = tmp_path / "tree"
    assert invoke("index", "keyword", "--corpus", texts, "--out", tree).exit_code == 0
    (store,) = tree.glob("*.sqlite")
    with sqlite3.connect(store) as connection:
        connection.execute("ALTER TABLE chunks DROP COLUMN fields")
    assert [where(h) for h in hits(tree, "okapi")] == [("plain.txt", None, None)]
    more = tmp_path / "more"
    more.mkdir()
    (more / "guide.md").write_text("# Guide\n\n## Okapi\n\nokapi weights", encoding="utf-8")
    result = invoke("add", tree, "--corpus", more)
    assert result.exit_code == 0, result.output
    assert [where(h) for h in hits(tree, "okapi")] == [("guide.md", None, "Guide › Okapi"), ("plain.txt", None, None)]


def test_a_pptx_deck_cites_its_slide_as_page_and_its_slide_title_as_section(tmp_path):
    folder = tmp_path / "slides"
    folder.mkdir()
    write_pptx(folder / "deck.pptx", [("Okapi BM25", ["term saturation"]), ("Fusion", ["reciprocal rank fusion"])])
    tree = tmp_path / "tree"
    result = invoke("index", "keyword", "--corpus", folder, "--out", tree)
    assert result.exit_code == 0 and "read 1 documents, skipped 0, failed 0" in result.output, result.output
    assert [where(h) for h in hits(tree, "reciprocal rank fusion")] == [("deck.pptx", 2, "Fusion")]
    assert hits(tree, "okapi", "--filter", '{"file_type": "pptx"}')[0]["metadata"]["pages"] == 2
