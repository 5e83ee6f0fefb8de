"""Documents added to a saved tree over HTTP carry any JSON metadata (issue 24: strings, numbers, booleans, lists,
ISO dates), which queries then filter on; the tree's documents are listed a page at a time; the trace of a
filtered query records its filter. Through a real uvicorn server on loopback.

The tests that only read the tree after ``DOCUMENTS`` were added share one server where they were added once
(``added_http``: one add job for the file, not one per test); a test that changes the trees has its own (``http``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import httpx
import pytest

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.service.conftest import LoopbackServer
from tests.service.test_trees_api import wait_for

SPARSE = "Sparse retrieval with inverted indexes and BM25 term weights."
DOCUMENTS = [
    {"id": "notes/old.txt", "title": "Old notes", "text": f"{SPARSE} Written long ago.",
     "metadata": {"year": 2009, "lang": "en", "reviewed": True, "tags": ["bm25", "sparse"], "published": "2009-03-01"}},
    {"id": "notes/new.txt", "title": "New notes", "text": f"{SPARSE} Written lately.",
     "metadata": {"year": 2023, "lang": "es", "reviewed": False, "tags": ["sparse"],
                  "published": "2023-11-30T10:00:00+01:00"}},
]


@pytest.fixture
def http(trees_copy) -> Iterator[httpx.Client]:
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees_copy))) as server, \
            httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def added_http(trees_dir, tmp_path_factory) -> Iterator[httpx.Client]:
    """A server over a copy of the trees whose ``kw`` got ``DOCUMENTS`` by ``POST /trees/kw/documents``, for the
    tests that only read (queries, listings, refused requests): the add job runs once per file."""
    trees = tmp_path_factory.mktemp("metadata") / "trees"
    shutil.copytree(trees_dir, trees)
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees))) as server, \
            httpx.Client(base_url=server.url, timeout=60) as client:
        assert added(client, json={"documents": DOCUMENTS})["status"] == "done"
        yield client


def added(http: httpx.Client, **body) -> dict:
    response = http.post("/trees/kw/documents", **body)
    assert response.status_code == 202, response.text
    return wait_for(http, response.json()["job_id"])


def found(http: httpx.Client, filters: dict) -> list[str]:
    response = http.post("/trees/kw/query", json={"query": "sparse inverted indexes", "top_k": 20, "filters": filters})
    assert response.status_code == 200, response.text
    return [c["document_id"] for c in response.json()["chunks"]]


@pytest.mark.parametrize(("filters", "expected"), [
    ({"year": {"$gte": 2020}}, ["notes/new.txt"]),
    ({"reviewed": True}, ["notes/old.txt"]),
    ({"tags": "bm25"}, ["notes/old.txt"]),
    ({"published": {"$lt": "2020-01-01"}}, ["notes/old.txt"]),
    ({"lang": {"$in": ["es", "de"]}, "year": {"$exists": True}}, ["notes/new.txt"]),
], ids=["number", "boolean", "list", "date", "in-and-exists"])
def test_posted_json_metadata_is_filtered_on(added_http, filters, expected):
    assert found(added_http, filters) == expected


def test_the_metadata_is_returned_with_every_hit(added_http):
    chunks = added_http.post("/trees/kw/query", json={"query": "written lately", "top_k": 1}).json()["chunks"]
    assert chunks[0]["metadata"] == DOCUMENTS[1]["metadata"]


def test_metadata_that_is_not_an_object_is_a_422_naming_the_document(added_http):
    response = added_http.post("/trees/kw/documents", json={"documents": [{**DOCUMENTS[0], "metadata": [1, 2]}]})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "documents", 0, "metadata"]


@pytest.mark.slow
def test_uploaded_files_take_their_metadata_from_a_sidecar(http):
    sidecar = "\n".join(json.dumps({"file": d["id"].rpartition("/")[2], "metadata": d["metadata"]})
                        for d in DOCUMENTS)
    files = [("corpus", (d["id"].rpartition("/")[2], d["text"].encode(), "text/plain")) for d in DOCUMENTS]
    status = added(http, files=[*files, ("corpus", ("metadata.jsonl", sidecar.encode(), "application/jsonl"))])
    assert status["status"] == "done" and status["counts"]["added"] == 2
    assert found(http, {"year": {"$lt": 2020}}) == ["old.txt"]
    assert "metadata.jsonl" not in {d["id"] for d in http.get("/trees/kw/documents").json()["documents"]}


def test_a_sidecar_alone_is_a_422(added_http):
    response = added_http.post("/trees/kw/documents",
                               files=[("corpus", ("metadata.jsonl", b"{}", "application/jsonl"))])
    assert response.status_code == 422 and "metadata.jsonl" in response.text


def test_the_documents_are_listed_a_page_at_a_time_in_corpus_order(added_http):
    everything = added_http.get("/trees/kw/documents", params={"limit": 500}).json()
    assert everything["total"] == len(everything["documents"]) == 10
    assert everything["documents"][-2:] == [{"id": d["id"], "title": d["title"], "metadata": d["metadata"],
                                             "chunks": 1} for d in DOCUMENTS]
    page = added_http.get("/trees/kw/documents", params={"offset": 3, "limit": 4}).json()
    assert (page["total"], page["offset"], page["limit"]) == (10, 3, 4)
    assert page["documents"] == everything["documents"][3:7]


def test_a_bad_page_is_a_422_and_an_unknown_tree_a_404(added_http):
    assert added_http.get("/trees/kw/documents", params={"limit": 0}).status_code == 422
    assert added_http.get("/trees/kw/documents", params={"offset": -1}).status_code == 422
    missing = added_http.get("/trees/nope/documents")
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]


def test_the_trace_of_a_filtered_query_records_the_filter(added_http):
    filters = {"year": {"$gte": 2020}}
    trace = added_http.post("/trees/kw/query", json={"query": "sparse", "filters": filters}).json()["trace"]
    assert trace["filters"] == filters


@pytest.mark.slow
def test_a_tree_built_from_uploaded_files_reads_their_sidecar(http):
    sidecar = "\n".join(json.dumps({"file": d["id"].rpartition("/")[2], "metadata": d["metadata"]})
                        for d in DOCUMENTS)
    files = [("corpus", (d["id"].rpartition("/")[2], d["text"].encode(), "text/plain")) for d in DOCUMENTS]
    files.append(("corpus", ("metadata.jsonl", sidecar.encode(), "text/plain")))
    response = http.post("/trees/upload", files=files,
                         data={"name": "uploaded", "config": json.dumps({"component": "BM25Retriever"})})
    assert response.status_code == 202, response.text
    assert wait_for(http, response.json()["job_id"])["status"] == "done"
    listed = {d["id"]: d["metadata"] for d in http.get("/trees/uploaded/documents").json()["documents"]}
    assert set(listed) == {d["id"].rpartition("/")[2] for d in DOCUMENTS}
    for document in DOCUMENTS:  # the sidecar's fields, beside what the file itself gives (docs/documents.md)
        name = document["id"].rpartition("/")[2]
        assert listed[name] == {**listed[name], **document["metadata"]}
        assert listed[name]["path"] == name and listed[name]["file_type"] == "txt"


def test_the_retrieve_pipelines_search_step_records_the_filter(added_http):
    filters = {"lang": "es"}
    trace = added_http.post("/retrieve", json={"query": "sparse inverted indexes", "collection_name": "kw",
                                               "trace": True, "filters": filters}).json()["trace"]
    [search] = [node for node in trace["children"] if node["component"] == "search"]
    assert search["selection"]["filters"] == filters  # beside the collections searched


MISSPELT = ("the filter's field 'yaer' ($.yaer.$gte) is in no document, so it matches nothing; the fields are: "
            "file_type, lang, modified, path, published, reviewed, section, sha256, tags, title, year")


def test_a_tree_query_filtering_on_a_field_no_document_has_answers_a_warning_naming_the_fields(added_http):
    response = added_http.post("/trees/kw/query", json={"query": "sparse", "filters": {"yaer": {"$gte": 2020}}})
    assert response.status_code == 200 and response.json()["chunks"] == []
    assert response.json()["warnings"] == [MISSPELT]
    spelt_right = added_http.post("/trees/kw/query", json={"query": "sparse", "filters": {"year": 2023}})
    assert spelt_right.json()["warnings"] == []


def test_retrieve_filtering_on_a_field_no_document_has_answers_the_same_warning(added_http):
    response = added_http.post("/retrieve", json={"query": "sparse", "collection_name": "kw",
                                                  "filters": {"yaer": {"$gte": 2020}}})
    assert response.status_code == 200, response.text
    assert response.json()["context_chunks"] == [] and response.json()["warnings"] == [MISSPELT]


def test_the_fields_route_lists_each_field_with_its_types_count_and_values(added_http):
    response = added_http.get("/trees/kw/fields")
    assert response.status_code == 200, response.text
    fields = {f["name"]: f for f in response.json()["fields"]}
    assert sorted(fields) == ["file_type", "lang", "modified", "path", "published", "reviewed", "section", "sha256",
                              "tags", "title", "year"]  # the posted documents' fields, the folder files' own and
    # the Markdown files' chunks' sections
    assert fields["section"]["documents"] == 5 and "BM25" in fields["section"]["values"]
    assert fields["year"] == {"name": "year", "types": ["number"], "documents": 2, "values": [2009, 2023]}
    assert fields["tags"]["types"] == ["list", "string"] and fields["tags"]["values"][0] == "sparse"
    assert fields["published"]["types"] == ["date"]


def test_the_fields_of_a_tree_that_does_not_exist_are_a_404(added_http):
    assert added_http.get("/trees/nope/fields").status_code == 404


@pytest.mark.parametrize(("filters", "path", "message"), [
    ([{"year": 2024}], "$", "a filter is a JSON object, not a list"),
    ({"year": {"$gtee": 2015}}, "$.year.$gtee", "unknown operator"),
])
def test_the_filter_check_route_answers_the_clis_message(added_http, filters, path, message):
    response = added_http.post("/schemas/filter/check", json=filters)
    assert response.status_code == 200, response.text
    (problem,) = response.json()["errors"]
    assert problem["path"] == path and message in problem["message"]
    assert added_http.post("/schemas/filter/check", json={"year": {"$gte": 2015}}).json() == {"errors": []}
