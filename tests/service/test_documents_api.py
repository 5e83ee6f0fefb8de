"""A saved tree's documents over HTTP (docs/updating.md): add as a job, remove at once, queries answered by the
old tree until the new one is published, and the served tree (calibration included) equals a rebuild."""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import quote

import pytest

import dashrag
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import SourceDocument
from dashrag.service.collections import TreeCollection
from tests.conftest import EXAMPLE_CORPUS, folder_digest
from tests.fixtures.removed_text import example_sentence, files_holding
from tests.service.conftest import KEYWORD, make_client
from tests.service.test_trees_api import wait_for

NEW = {"id": "notes/sparse.txt", "text": "Sparse retrieval with inverted indexes and BM25 term weights."}
QUERY = {"query": "sparse inverted indexes", "top_k": 5}


def answer(client, query=QUERY) -> list[tuple[str, int, float]]:
    response = client.post("/trees/kw/query", json=query)
    assert response.status_code == 200, response.text
    return [(c["document_id"], c["position"], round(c["score"], 5)) for c in response.json()["chunks"]]


def rebuilt(tmp_path: Path, documents: list[SourceDocument]) -> TreeCollection:
    dashrag.build(KEYWORD, Corpus(tuple(documents)), tmp_path / "work").save(tmp_path / "rebuilt")
    return TreeCollection(tmp_path / "rebuilt")


@pytest.mark.slow
def test_posted_documents_are_added_as_a_job_and_served_as_a_rebuild(trees_copy, tmp_path):
    with make_client(trees_dir=trees_copy) as client:
        accepted = client.post("/trees/kw/documents", json={"documents": [NEW]})
        assert accepted.status_code == 202
        status = wait_for(client, accepted.json()["job_id"])
        assert status["status"] == "done" and status["counts"] == {"added": 1, "replaced": 0, "skipped": 0,
                                                                   "removed": 0}
        got = answer(client)
        info = {t["name"]: t for t in client.get("/trees").json()}["kw"]
    expected = rebuilt(tmp_path, [*Corpus.from_folder(EXAMPLE_CORPUS).documents, SourceDocument(**NEW)])
    chunks, _ = expected.query(QUERY["query"], QUERY["top_k"])
    assert got[0][0] == NEW["id"]
    assert got == [(c.document_id, c.chunk.position, round(c.score, 5)) for c in chunks]
    assert info["calibration"] == expected.info()["calibration"]  # the calibration constant follows the corpus


@pytest.mark.slow
def test_uploaded_files_are_added_and_an_identical_one_skipped(trees_copy):
    with make_client(trees_dir=trees_copy) as client:
        files = [("corpus", ("sparse.txt", NEW["text"].encode(), "text/plain")),
                 ("corpus", ("bm25.md", (EXAMPLE_CORPUS / "bm25.md").read_bytes(), "text/markdown"))]
        status = wait_for(client, client.post("/trees/kw/documents", files=files).json()["job_id"])
        assert status["status"] == "done", status
        assert status["counts"] == {"added": 1, "replaced": 0, "skipped": 1, "removed": 0}
    assert not any(p.name.startswith(".upload-") for p in trees_copy.iterdir())


def test_a_document_without_an_id_is_422_and_changes_nothing(trees_copy):
    with make_client(trees_dir=trees_copy) as client:
        before = folder_digest(trees_copy / "kw")  # once served: the first load caches its calibration beside it
        response = client.post("/trees/kw/documents", json={"documents": [{"text": "no id here"}]})
        assert response.status_code == 422
        assert "id" in response.text
    assert folder_digest(trees_copy / "kw") == before


def test_documents_of_an_unknown_tree_are_404(trees_copy):
    with make_client(trees_dir=trees_copy) as client:
        assert client.post("/trees/nope/documents", json={"documents": [NEW]}).status_code == 404
        assert client.delete("/trees/nope/documents/bm25.md").status_code == 404


def test_delete_removes_one_document_and_an_unknown_id_is_404(trees_copy):
    with make_client(trees_dir=trees_copy) as client:
        before = answer(client, {"query": "BM25 term frequency saturation", "top_k": 8})
        assert "bm25.md" in {d for d, _, _ in before}
        response = client.delete("/trees/kw/documents/bm25.md")
        assert response.status_code == 200 and response.json()["removed"] == 1
        after = answer(client, {"query": "BM25 term frequency saturation", "top_k": 8})
        assert "bm25.md" not in {d for d, _, _ in after}
        missing = client.delete("/trees/kw/documents/bm25.md")
        assert missing.status_code == 404 and "unknown document id" in missing.json()["detail"]


def test_delete_with_purge_takes_the_documents_text_off_the_trees_files(trees_copy):
    line = example_sentence("bm25.md")
    with make_client(trees_dir=trees_copy) as client:
        assert files_holding(trees_copy / "kw", line)
        response = client.delete("/trees/kw/documents/bm25.md", params={"purge": "true"})
        assert response.status_code == 200 and response.json()["removed"] == 1
        assert not files_holding(trees_copy / "kw", line)
        assert "bm25.md" not in {d for d, _, _ in answer(client, {"query": "BM25 saturation", "top_k": 8})}
        bad = client.delete("/trees/kw/documents/chunking.txt", params={"purge": "maybe"})
        assert bad.status_code == 422 and "purge" in bad.text


@pytest.mark.slow
def test_queries_during_an_update_are_answered_by_the_old_or_the_new_tree(trees_copy):
    with make_client(trees_dir=trees_copy) as client:
        old = answer(client)
        seen: list = []
        stop = threading.Event()

        def ask() -> None:
            while not stop.is_set():
                seen.append(answer(client))

        asker = threading.Thread(target=ask)
        asker.start()
        try:
            status = wait_for(client, client.post("/trees/kw/documents", json={"documents": [NEW]}).json()["job_id"])
        finally:
            stop.set()
            asker.join()
        new = answer(client)
    assert status["status"] == "done" and new != old
    assert seen and all(a in (old, new) for a in seen)


@pytest.mark.slow
def test_a_served_tree_on_qdrant_edge_takes_document_posts_and_removals(tmp_path):
    """The served tree holds its Edge shards (Edge locks a shard's write-ahead log), so its update runs in the
    serving process: the job is done, the answer is a rebuild's, and a removal works after it."""
    on_edge = {**KEYWORD, "params": {**KEYWORD["params"], "index": {"component": "QdrantKeywordIndex", "params": {}}}}
    dashrag.api.build_tree(on_edge, EXAMPLE_CORPUS, tmp_path / "trees" / "kw")
    with make_client(trees_dir=tmp_path / "trees") as client:
        status = wait_for(client, client.post("/trees/kw/documents", json={"documents": [NEW]}).json()["job_id"])
        got = answer(client)
        removed = client.delete("/trees/kw/documents/bm25.md")
        after = answer(client, {"query": "BM25 term frequency saturation", "top_k": 8})
    assert status["status"] == "done", status
    assert status["counts"] == {"added": 1, "replaced": 0, "skipped": 0, "removed": 0}
    documents = [*Corpus.from_folder(EXAMPLE_CORPUS).documents, SourceDocument(**NEW)]
    dashrag.api.build_tree(on_edge, Corpus(tuple(documents)), tmp_path / "rebuilt")
    expected = TreeCollection(tmp_path / "rebuilt")
    try:
        chunks, _ = expected.query(QUERY["query"], QUERY["top_k"])
    finally:
        expected.retriever.close()
    assert got[0][0] == NEW["id"] and got == [(c.document_id, c.chunk.position, round(c.score, 5)) for c in chunks]
    assert removed.status_code == 200 and removed.json()["removed"] == 1
    assert "bm25.md" not in {d for d, _, _ in after}


def test_an_id_with_control_characters_is_added_listed_and_deleted_by_url(trees_copy):
    """One rule for ids on every route: what a post accepts, DELETE removes (a newline included)."""
    ids = ["notes/a\nb.txt", "c\td", "e\x1bf\r"]
    with make_client(trees_dir=trees_copy) as client:
        documents = [{"id": i, "text": f"sparse retrieval note {n}"} for n, i in enumerate(ids)]
        status = wait_for(client, client.post("/trees/kw/documents", json={"documents": documents}).json()["job_id"])
        listed = [d["id"] for d in client.get("/trees/kw/documents", params={"limit": 500}).json()["documents"]]
        removed = [client.delete(f"/trees/kw/documents/{quote(i, safe='/')}") for i in ids]
        left = [d["id"] for d in client.get("/trees/kw/documents", params={"limit": 500}).json()["documents"]]
    assert status["status"] == "done" and listed[-3:] == ids
    assert [(r.status_code, r.json()) for r in removed] == [(200, {"added": 0, "replaced": 0, "skipped": 0,
                                                                   "removed": 1})] * 3
    assert not set(ids) & set(left)
