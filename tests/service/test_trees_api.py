"""The tree API the web page uses: components, schemas, trees, validation, builds as jobs, query, reload, delete."""

from __future__ import annotations

import json
import time

import pytest

from dashrag.core.schema import rendered_exports
from tests.conftest import EXAMPLE_CORPUS, REPO
from tests.service.conftest import KEYWORD, make_client

#: What a keyword build job goes through, each stage once, in order (GET /jobs/{id}'s ``stages``).
KEYWORD_BUILD_STAGES = ["reading the corpus", "chunking", "storing", "fitting", "saving", "publishing"]


def wait_for(client, job_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = client.get(f"/jobs/{job_id}").json()
        if status["status"] in ("done", "failed") or time.monotonic() > deadline:
            return status
        time.sleep(0.1)


def test_health_is_static(client):
    assert client.get("/health").json() == {"service": "rag_service", "status": "ok"}


def test_components_are_the_frontend_meta_of_every_component_plus_its_name(client):
    files = rendered_exports()
    listed = client.get("/components").json()
    assert [c["name"] for c in listed] == sorted(c["name"] for c in listed)
    for entry in listed:
        meta = json.loads(files[f"frontend_meta/{entry['name']}.json"])
        assert {k: v for k, v in entry.items() if k != "name"} == meta


def test_a_schema_is_the_checked_in_one_and_an_unknown_component_is_404(client):
    """Every component's, asked twice, one by one and all at once (what the page asks for on every load): the
    service makes each schema once and answers the kept one after."""
    files = rendered_exports()
    names = [c["name"] for c in client.get("/components").json()]
    for _ in range(2):
        for name in names:
            assert client.get(f"/schemas/{name}").json() == json.loads(files[f"schemas/{name}.json"]), name
    assert client.get("/schemas").json() == {name: json.loads(files[f"schemas/{name}.json"]) for name in names}
    checked_in = json.loads((REPO / "schemas" / "BM25Retriever.json").read_text())
    assert client.get("/schemas/BM25Retriever").json() == checked_in
    for _ in range(2):  # an unknown name is refused each time, never kept
        missing = client.get("/schemas/BM25Retreiver")
        assert missing.status_code == 404 and "BM25Retriever" in missing.json()["detail"]


def test_trees_lists_each_saved_tree_with_its_size_and_fingerprint(client):
    trees = {t["name"]: t for t in client.get("/trees").json()}
    assert set(trees) == {"kw", "scifact"}
    assert trees["scifact"]["documents"] == trees["scifact"]["chunks"] == 400
    assert trees["kw"]["documents"] == 8 and trees["kw"]["config"]["component"] == "BM25Retriever"
    assert len(trees["kw"]["corpus_fingerprint"]) == 64 and trees["kw"]["calibration"]["kind"] == "saturating"


def test_validate_reports_every_problem_with_its_path(client):
    bad = {"component": "ParallelRetriever", "params": {"children": [
        {"component": "BM25Retriever", "params": {"top_k": 0}},
        {"component": "Nope", "params": {}}]}}
    answer = client.post("/trees/validate", json=bad).json()
    paths = [e["path"] for e in answer["errors"]]
    assert answer["valid"] is False
    assert "params.children[0].params.top_k" in paths and "params.children[1].component" in paths
    assert client.post("/trees/validate", json=KEYWORD).json() == {"valid": True, "errors": []}


def test_a_tree_is_built_from_a_path_under_the_data_root_as_a_job_and_served(trees_copy):
    with make_client(trees_dir=trees_copy, data_root=EXAMPLE_CORPUS.parent) as client:
        accepted = client.post("/trees", json={"name": "fresh", "config": KEYWORD, "corpus_path": "corpus"})
        assert accepted.status_code == 202
        status = wait_for(client, accepted.json()["job_id"])
        files = sorted(p.name for p in EXAMPLE_CORPUS.iterdir() if not p.name.startswith("."))
        assert status | {"message": "", "elapsed_s": 0, "files": None} == {
            "id": accepted.json()["job_id"], "status": "done", "progress": 1.0, "message": "", "tree": "fresh",
            "error": None, "stage": "publishing", "stages": KEYWORD_BUILD_STAGES, "done": 0, "total": None,
            "elapsed_s": 0, "stage_eta_s": None, "counts": None, "files": None, "warnings": [], "report": None}
        assert status["files"] == {"read": files, "skipped": [], "failed": []}  # each file of the folder, read
        assert "fresh" in [t["name"] for t in client.get("/trees").json()]
        query = "how does BM25 saturate term frequency"
        answer = client.post("/retrieve", json={"query": query, "collection_name": "fresh"}).json()
        assert answer["context_chunks"][0]["source_id"] == "bm25.md"
    assert sorted(p.name for p in trees_copy.iterdir()) == ["fresh", "kw", "scifact"]  # nothing half-built left


@pytest.mark.slow
def test_a_tree_is_built_from_uploaded_files(trees_copy):
    files = [("corpus", (p.name, p.read_bytes(), "text/plain")) for p in sorted(EXAMPLE_CORPUS.glob("*.md"))]
    with make_client(trees_dir=trees_copy) as client:
        accepted = client.post("/trees", data={"name": "uploaded", "config": json.dumps(KEYWORD)}, files=files)
        assert accepted.status_code == 202, accepted.text
        assert wait_for(client, accepted.json()["job_id"])["status"] == "done"
        info = next(t for t in client.get("/trees").json() if t["name"] == "uploaded")
    assert info["documents"] == len(files)
    assert not [p for p in trees_copy.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_a_taken_name_is_409_unless_overwrite(trees_copy):
    with make_client(trees_dir=trees_copy, data_root=EXAMPLE_CORPUS.parent) as client:
        body = {"name": "kw", "config": KEYWORD, "corpus_path": "corpus"}
        assert client.post("/trees", json=body).status_code == 409
        accepted = client.post("/trees", json={**body, "overwrite": True})
        assert accepted.status_code == 202 and wait_for(client, accepted.json()["job_id"])["status"] == "done"


def test_an_invalid_config_name_or_corpus_is_422(trees_copy):
    with make_client(trees_dir=trees_copy, data_root=EXAMPLE_CORPUS.parent) as client:
        bad_config = client.post("/trees", json={"name": "x", "config": {"component": "BM25Retriever",
                                                 "params": {"top_k": 0}}, "corpus_path": "corpus"})
        bad_name = client.post("/trees", json={"name": "../up", "config": KEYWORD, "corpus_path": "corpus"})
        outside = client.post("/trees", json={"name": "x", "config": KEYWORD, "corpus_path": "../../etc"})
    assert [a.status_code for a in (bad_config, bad_name, outside)] == [422, 422, 422]
    assert bad_config.json()["detail"][0]["path"] == "params.top_k"


@pytest.mark.slow
def test_a_failed_build_is_a_failed_job_and_leaves_nothing(trees_copy, tmp_path):
    (tmp_path / "data" / "empty").mkdir(parents=True)
    with make_client(trees_dir=trees_copy, data_root=tmp_path / "data") as client:
        accepted = client.post("/trees", json={"name": "empty", "config": KEYWORD, "corpus_path": "empty"})
        status = wait_for(client, accepted.json()["job_id"])
    assert status["status"] == "failed" and status["tree"] is None and "empty" in status["error"]
    assert sorted(p.name for p in trees_copy.iterdir()) == ["kw", "scifact"]


def test_an_unknown_job_is_404(client):
    assert client.get("/jobs/nope").status_code == 404


def test_query_answers_the_tree_with_native_scores_and_its_trace(client):
    answer = client.post("/trees/kw/query", json={"query": "bm25 ranking saturation", "top_k": 3}).json()
    assert len(answer["chunks"]) == 3 and answer["chunks"][0]["document_id"] == "bm25.md"
    assert answer["chunks"][0]["score"] > 1.0  # BM25's own scale, not the calibrated one
    assert answer["trace"]["component"] == "BM25Retriever" and answer["elapsed_ms"] > 0
    assert client.post("/trees/nope/query", json={"query": "x"}).status_code == 404
    assert client.post("/trees/kw/query", json={"query": " "}).status_code == 422


def test_reload_and_delete(trees_copy):
    with make_client(trees_dir=trees_copy) as client:
        assert client.post("/trees/kw/reload").json()["name"] == "kw"
        assert client.delete("/trees/kw").status_code == 204
        assert client.post("/retrieve", json={"query": "bm25", "collection_name": "kw"}).status_code == 404
        assert client.delete("/trees/kw").status_code == 404
        assert client.post("/trees/kw/reload").status_code == 404
    assert sorted(p.name for p in trees_copy.iterdir()) == ["scifact"]


def test_a_tree_query_takes_a_filter_and_returns_metadata(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(line) + "\n" for line in [
        {"_id": "a", "text": "keyword search ranks documents", "metadata": {"lang": "en", "year": 2020}},
        {"_id": "b", "text": "keyword search with bm25", "metadata": {"lang": "de", "year": 2010}}]))
    trees = tmp_path / "trees"
    import dashrag

    dashrag.build(KEYWORD, corpus, tmp_path / "work").save(trees / "meta")
    with make_client(trees_dir=trees, retrieval_score_floor=0.0, confidence_threshold=0.0) as client:
        answer = client.post("/trees/meta/query", json={"query": "keyword search", "filters": {"lang": "de"}})
        assert answer.status_code == 200, answer.text
        assert [(c["document_id"], c["metadata"]) for c in answer.json()["chunks"]] == [
            ("b", {"lang": "de", "year": 2010})]
        retrieved = client.post("/retrieve", json={"query": "keyword search", "collection_name": "meta",
                                                  "filters": {"year": {"$gte": 2015}}})
        assert retrieved.status_code == 200, retrieved.text
        assert [c["metadata"]["lang"] for c in retrieved.json()["context_chunks"]] == ["en"]
        malformed = client.post("/trees/meta/query", json={"query": "keyword", "filters": {"year": {"$gtee": 1}}})
        assert malformed.status_code == 422 and "$.year.$gtee" in malformed.text
        misfit = client.post("/retrieve", json={"query": "keyword", "collection_name": "meta",
                                               "filters": {"year": "2015"}})
        assert misfit.status_code == 422
        assert misfit.json()["detail"][0]["path"] == "$.year" and "compares a string" in misfit.text
        assert client.get("/schemas/filter").json() == json.loads((REPO / "schemas" / "filter.schema.json").read_text())
