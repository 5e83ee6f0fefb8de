"""``POST /trees/{name}/sync`` (docs/documents.md): a tree built from a folder under the data root is brought in
line with it as a job, with the counts when done, and then answers as a fresh build of the folder."""

from __future__ import annotations

import pytest

import dashrag
from tests.cli.test_update_commands_sync import change_folder, make_folder
from tests.conftest import folder_digest
from tests.service.conftest import KEYWORD, make_client
from tests.service.test_trees_api import wait_for

QUERY = {"query": "okapi saturation sparse postings", "top_k": 5}


def served(client, name: str) -> list[tuple[str, float]]:
    response = client.post(f"/trees/{name}/query", json=QUERY)
    assert response.status_code == 200, response.text
    return sorted((c["document_id"], round(c["score"], 5)) for c in response.json()["chunks"])


@pytest.mark.slow
def test_sync_job_updates_the_served_tree_as_a_fresh_build(tmp_path):
    data, trees = tmp_path / "data", tmp_path / "trees"
    data.mkdir()
    folder = make_folder(data / "docs")
    dashrag.build_tree("keyword", folder, trees / "docs")
    change_folder(folder)
    dashrag.build_tree("keyword", folder, trees / "fresh")
    with make_client(trees_dir=trees, data_root=data) as client:
        accepted = client.post("/trees/docs/sync", json={"corpus_path": "docs"})
        assert accepted.status_code == 202, accepted.text
        status = wait_for(client, accepted.json()["job_id"])
        assert status["status"] == "done", status
        assert status["counts"] == {"added": 1, "replaced": 1, "removed": 1, "unchanged": 3, "failed": 0}
        assert served(client, "docs") == served(client, "fresh")


def test_sync_from_outside_the_data_root_is_422_and_changes_nothing(tmp_path):
    data, trees = tmp_path / "data", tmp_path / "trees"
    data.mkdir()
    folder = make_folder(tmp_path / "elsewhere")
    dashrag.build_tree("keyword", folder, trees / "docs")
    with make_client(trees_dir=trees, data_root=data) as client:
        before = folder_digest(trees / "docs")  # as the service left it on load (its score calibration cached)
        response = client.post("/trees/docs/sync", json={"corpus_path": "../elsewhere"})
        assert response.status_code == 422 and "not a corpus under the data root" in response.text
        assert str(tmp_path) not in response.text
        assert client.post("/trees/nope/sync", json={"corpus_path": "docs"}).status_code == 404
    assert folder_digest(trees / "docs") == before


@pytest.mark.slow
def test_uploaded_pdf_and_docx_files_build_a_tree_that_finds_them(tmp_path):
    import json

    from tests.fixtures.documents import write_docx, write_pdf

    pdf = write_pdf(tmp_path / "report.pdf", [["Okapi ranking"], ["reciprocal rank fusion"]], title="Q3")
    docx = write_docx(tmp_path / "notes.docx", [("h1", "Notes"), ("p", "dense embeddings as vectors")])
    files = [("corpus", ("report.pdf", pdf.read_bytes(), "application/pdf")),
             ("corpus", ("notes.docx", docx.read_bytes(), "application/octet-stream"))]
    form = {"name": "uploaded", "config": json.dumps(KEYWORD)}
    with make_client(trees_dir=tmp_path / "trees") as client:
        accepted = client.post("/trees/upload", data=form, files=files)
        assert accepted.status_code == 202, accepted.text
        assert wait_for(client, accepted.json()["job_id"])["status"] == "done"
        hits = client.post("/trees/uploaded/query", json={"query": "reciprocal rank fusion", "top_k": 2}).json()
    best = hits["chunks"][0]
    assert best["document_id"] == "report.pdf"
    assert best["metadata"]["file_type"] == "pdf" and best["metadata"]["pages"] == 2


def _markdown_folder(folder):
    folder.mkdir(parents=True)
    (folder / "bm25.md").write_text("# BM25\n\nokapi saturation of term frequency", encoding="utf-8")
    (folder / "gone.txt").write_text("sparse postings of a file that will be deleted", encoding="utf-8")
    return folder


@pytest.mark.slow  # a build job and a sync job in worker processes: about 11 s here
def test_a_tree_built_from_a_data_root_folder_records_it_and_syncs_with_it_unnamed(tmp_path):
    data, trees = tmp_path / "data", tmp_path / "trees"
    folder = _markdown_folder(data / "team" / "docs")
    with make_client(trees_dir=trees, data_root=data) as client:
        built = client.post("/trees", json={"name": "docs", "config": KEYWORD, "corpus_path": "team/../team/docs"})
        assert built.status_code == 202, built.text
        assert wait_for(client, built.json()["job_id"])["status"] == "done"
        listed = {t["name"]: t for t in client.get("/trees").json()}
        assert listed["docs"]["source_folder"] == "team/docs"  # relative to the data root, normalised
        assert str(tmp_path) not in client.get("/trees").text
        (folder / "gone.txt").unlink()
        (folder / "new.md").write_text("# Fusion\n\nreciprocal rank fusion", encoding="utf-8")
        accepted = client.post("/trees/docs/sync", json={})
        assert accepted.status_code == 202, accepted.text
        status = wait_for(client, accepted.json()["job_id"])
        assert status["counts"] == {"added": 1, "replaced": 0, "removed": 1, "unchanged": 1, "failed": 0}, status
        assert client.post("/trees/docs/reload").json()["source_folder"] == "team/docs"  # kept by the update's save
    assert dashrag.api.source_folder_of(trees / "docs") == "team/docs"


def test_a_sync_without_a_folder_of_a_tree_that_records_none_usable_is_422(tmp_path):
    data, trees = tmp_path / "data", tmp_path / "trees"
    data.mkdir()
    outside = _markdown_folder(tmp_path / "elsewhere")
    dashrag.build_tree("keyword", outside, trees / "outside", source_folder=outside)  # as `dashrag index` records
    dashrag.build_tree("keyword", outside, trees / "none")
    with make_client(trees_dir=trees, data_root=data) as client:
        before = folder_digest(trees)
        assert [t["source_folder"] for t in client.get("/trees").json()] == [None, None]  # no server path shown
        for name in ("outside", "none"):
            response = client.post(f"/trees/{name}/sync", json={})
            assert response.status_code == 422, response.text
            assert f"the tree {name!r} records no folder under the data root" in response.text
            assert str(tmp_path) not in response.text
    assert folder_digest(trees) == before


@pytest.mark.slow  # a build job converting 13 files in worker processes: about 10 s here
def test_a_data_root_folder_of_every_format_and_every_bad_file_builds_and_names_each_outcome(tmp_path, monkeypatch):
    from tests.documents.test_folder import make_bad_files, make_good_folder
    from tests.fixtures.documents import html_page, write_pptx

    data, trees = tmp_path / "data", tmp_path / "trees"
    folder = data / "mixed"
    folder.mkdir(parents=True)
    make_good_folder(folder)  # pdf, docx, html, md, txt
    make_bad_files(folder)  # encrypted, scanned and corrupt PDFs, a corrupt DOCX, a zip bomb, an unknown extension
    write_pptx(folder / "deck.pptx", [("Okapi BM25", ["term saturation"])])
    sentence = "Le caf\u00e9 est une boisson tr\u00e8s r\u00e9pandue, pr\u00e9par\u00e9e \u00e0 partir de graines."
    latin = html_page("Caf\u00e9", [sentence, sentence]).replace('charset="utf-8"', 'charset="x-no-such-encoding"')
    (folder / "latin.html").write_bytes(latin.encode("latin-1"))
    monkeypatch.setenv("DASHRAG_MAX_UNPACKED_MB", "2")  # the build worker inherits it: the bomb unpacks to 3 MiB
    with make_client(trees_dir=trees, data_root=data) as client:
        accepted = client.post("/trees", json={"name": "mixed", "config": KEYWORD, "corpus_path": "mixed"})
        assert accepted.status_code == 202, accepted.text
        status = wait_for(client, accepted.json()["job_id"])
        assert status["status"] == "done", status
        files = status["files"]
        assert sorted(files["read"]) == ["bm25.md", "deck.pptx", "latin.html", "notes.docx", "plain.txt",
                                         "report.pdf", "web/page.html"]
        assert files["skipped"] == [{"file": "photo.jpg", "why": "unknown file type '.jpg'"}]
        why = {f["file"]: f["why"] for f in files["failed"]}
        assert sorted(why) == ["bomb.docx", "broken.docx", "broken.pdf", "locked.pdf", "scan.pdf"]
        assert "encrypted" in why["locked.pdf"] and "no text layer" in why["scan.pdf"]
        assert "not a readable PDF" in why["broken.pdf"] and "not a valid DOCX" in why["broken.docx"]
        assert "more than the cap of 2 MiB" in why["bomb.docx"]
        assert str(tmp_path) not in accepted.text + str(status)
        hits = client.post("/trees/mixed/query", json={"query": "boisson graines", "top_k": 1}).json()["chunks"]
        assert hits[0]["document_id"] == "latin.html" and "Le caf\u00e9" in hits[0]["text"]
