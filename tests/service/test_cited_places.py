"""The service cites where an answer came from: ``/retrieve``'s ``cited_places`` (file, PDF page, section) and
every chunk's metadata, on both query routes; page and section filter each chunk."""

from __future__ import annotations

import pytest

import dashrag
from tests.cli.test_documents_structure import make_folder
from tests.service.conftest import make_client


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("cited")
    dashrag.build_tree("keyword", make_folder(root / "docs"), root / "trees" / "docs")
    with make_client(trees_dir=root / "trees", retrieval_score_floor=0.0, confidence_threshold=0.0) as client:
        yield client


def retrieve(client, query: str, **body) -> dict:
    response = client.post("/retrieve", json={"query": query, "collection_name": "docs", **body})
    assert response.status_code == 200, response.text
    return response.json()


def test_retrieve_cites_the_file_page_and_section_of_what_it_kept(client):
    answer = retrieve(client, "zebrafish were sampled")
    places = answer["cited_places"]
    assert places[0] == {"source_id": "report.pdf", "path": "report.pdf", "page": 3, "section": None}
    kept = [(c["source_id"], c["metadata"].get("page"), c["metadata"].get("section"))
            for c in answer["context_chunks"]]
    assert [(p["source_id"], p["page"], p["section"]) for p in places] == list(dict.fromkeys(kept))
    assert {"source_id": "notes.docx", "path": "notes.docx", "page": None, "section": "Methods › Sampling"} in \
        retrieve(client, "sampled mice at random")["cited_places"]


def test_page_and_section_filter_both_query_routes(client):
    answer = retrieve(client, "zebrafish sampled okapi", filters={"page": {"$lte": 2}})
    assert answer["cited_places"] and all(p["page"] in (1, 2) for p in answer["cited_places"])
    response = client.post("/trees/docs/query", json={"query": "results mice", "top_k": 10,
                                                      "filters": {"section": "Methods › Results"}})
    assert response.status_code == 200, response.text
    assert [(c["document_id"], c["metadata"]["section"]) for c in response.json()["chunks"]] == [
        ("notes.docx", "Methods › Results")]


def test_file_type_and_page_filters_hold_on_both_query_routes(client):
    query = {"query": "zebrafish sampled okapi fusion", "top_k": 20}
    unfiltered = client.post("/trees/docs/query", json=query).json()["chunks"]
    assert {c["metadata"]["file_type"] for c in unfiltered} > {"pdf"}  # the filter has something to leave out
    pdfs = client.post("/trees/docs/query", json={**query, "filters": {"file_type": "pdf"}}).json()["chunks"]
    assert pdfs and {c["metadata"]["file_type"] for c in pdfs} == {"pdf"}
    answer = retrieve(client, query["query"], filters={"$and": [{"file_type": "pdf"}, {"page": {"$lte": 3}}]})
    assert {(p["path"], p["page"]) for p in answer["cited_places"]} <= {("report.pdf", 1), ("report.pdf", 2),
                                                                         ("report.pdf", 3)}
    assert answer["cited_places"]
