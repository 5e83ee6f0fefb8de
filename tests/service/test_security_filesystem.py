"""The file system under the service (docs/security.md, issue 25's minor items), through the real server on
loopback: names the OS refuses are a 422, not a 500; a trees folder that cannot be written is a 503 or a failed
job and the trees stay served; an overwrite never takes the tree away; killed jobs' leftovers go at the start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

import dashrag
from dashrag.core.persistence import read_manifest
from dashrag.documents.model import SourceDocument
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from dashrag.store import segments
from tests.conftest import EXAMPLE_CORPUS
from tests.fixtures.filesystem import immutable
from tests.fixtures.jobs import finished_job
from tests.service.conftest import KEYWORD, LoopbackServer


@contextmanager
def served(trees: Path, **settings) -> Iterator[str]:
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees, data_root=EXAMPLE_CORPUS.parent,
                                                   **settings))) as server:
        yield server.url


@contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """No entry of ``folder`` can be added, renamed or removed: immutable for root (who passes every permission
    check), read-only for anyone else."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
            pytest.skip("root, and this file system has no immutable attribute")
        undo: list[str] | None = ["chattr", "-i", str(folder)]
    else:
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        undo = None
    try:
        yield
    finally:
        subprocess.run(undo, check=True) if undo else folder.chmod(mode)


@pytest.mark.slow
def test_an_upload_file_name_of_300_characters_is_a_422_and_leaves_nothing(trees_copy):
    with served(trees_copy) as url:
        answer = httpx.post(f"{url}/trees", data={"name": "long", "config": json.dumps(KEYWORD)},
                            files={"corpus": ("a" * 296 + ".txt", b"some text", "text/plain")})
    assert answer.status_code == 422 and "at most 200 characters" in answer.text, answer.text
    assert sorted(p.name for p in trees_copy.iterdir()) == ["kw", "scifact"]  # no .upload-* folder


@pytest.mark.slow
@pytest.mark.parametrize("corpus_path", ["corpus\x00.jsonl", "c" * 6000])
def test_a_corpus_path_the_os_refuses_is_a_422_not_a_500(trees_copy, corpus_path):
    with served(trees_copy) as url:
        answer = httpx.post(f"{url}/trees", json={"name": "odd", "config": KEYWORD, "corpus_path": corpus_path})
    assert answer.status_code == 422 and "is not a corpus under the data root" in answer.text
    assert len(answer.content) < 2_000


@pytest.mark.slow
def test_deleting_a_tree_in_an_unwritable_trees_folder_is_a_503_and_the_tree_stays_served(trees_copy):
    with served(trees_copy) as url, unwritable(trees_copy):
        deleted = httpx.delete(f"{url}/trees/kw")
        listed = [t["name"] for t in httpx.get(f"{url}/trees").json()]
        queried = httpx.post(f"{url}/trees/kw/query", json={"query": "bm25"})
    assert deleted.status_code == 503 and "cannot be deleted" in deleted.json()["detail"], deleted.text
    assert "kw" in listed and queried.status_code == 200 and (trees_copy / "kw" / "dashrag.json").is_file()


@pytest.mark.slow
def test_a_build_into_an_unwritable_trees_folder_is_a_failed_job_or_a_503_never_a_500(trees_copy):
    with served(trees_copy) as url, unwritable(trees_copy):
        job = httpx.post(f"{url}/trees", json={"name": "new", "config": KEYWORD, "corpus_path": "corpus"})
        status = finished_job(url, job.json()["job_id"], within_s=300)
        uploaded = httpx.post(f"{url}/trees", data={"name": "up", "config": json.dumps(KEYWORD)},
                              files={"corpus": ("a.txt", b"some text", "text/plain")})
        listed = [t["name"] for t in httpx.get(f"{url}/trees").json()]
    assert status["status"] == "failed" and "cannot be written" in status["error"], status
    assert uploaded.status_code == 503 and "upload" in uploaded.json()["detail"], uploaded.text
    assert listed == ["kw", "scifact"]


@pytest.mark.slow
def test_an_overwrite_build_never_unpublishes_the_tree(trees_copy):
    """Queries run all through an overwrite of the tree they ask: every one is answered."""
    statuses: list[int] = []
    done = threading.Event()
    with served(trees_copy) as url:
        def ask() -> None:
            with httpx.Client() as client:
                while not done.is_set():
                    statuses.append(client.post(f"{url}/trees/kw/query", json={"query": "bm25"}).status_code)

        asker = threading.Thread(target=ask)
        asker.start()
        try:
            for _ in range(2):
                job = httpx.post(f"{url}/trees", json={"name": "kw", "config": KEYWORD, "corpus_path": "corpus",
                                                       "overwrite": True})
                assert finished_job(url, job.json()["job_id"], within_s=300)["status"] == "done"
            time.sleep(2.5)  # past the registry's rescan: the folder is looked at again while queries run
        finally:
            done.set()
            asker.join()
    assert statuses and set(statuses) == {200}, {s: statuses.count(s) for s in set(statuses)}


@pytest.mark.slow
def test_what_killed_jobs_left_is_removed_at_the_next_start(trees_copy):
    for leftover in (".upload-1", ".building-2", ".work-3"):
        (trees_copy / leftover).mkdir()
        (trees_copy / leftover / "part.txt").write_text("x")
    (trees_copy / "kw" / ".store-abc.sqlite.tmp").write_bytes(b"half a store")
    with served(trees_copy) as url:
        listed = [t["name"] for t in httpx.get(f"{url}/trees").json()]
    assert listed == ["kw", "scifact"] and sorted(p.name for p in trees_copy.iterdir()) == ["kw", "scifact"]
    assert not list((trees_copy / "kw").glob(".store-*"))


@pytest.mark.slow
def test_document_routes_into_an_unwritable_tree_are_a_503_never_a_500(trees_copy):
    """A removal into an immutable tree folder and an upload into an immutable trees folder name the step; the
    tree stays served as it was."""
    with served(trees_copy) as url:
        with unwritable(trees_copy / "kw"):
            removed = httpx.delete(f"{url}/trees/kw/documents/bm25.md")
        with unwritable(trees_copy):
            uploaded = httpx.post(f"{url}/trees/kw/documents/upload",
                                  files={"corpus": ("a.txt", b"some text", "text/plain")})
        listed = httpx.get(f"{url}/trees/kw/documents", params={"limit": 500}).json()
    assert removed.status_code == 503 and "cannot be written" in removed.json()["detail"], removed.text
    assert uploaded.status_code == 503 and "upload" in uploaded.json()["detail"], uploaded.text
    assert str(trees_copy) not in removed.text + uploaded.text
    assert "bm25.md" in [d["id"] for d in listed["documents"]]


@pytest.mark.slow
def test_a_documents_page_offset_past_any_integer_the_store_takes_is_a_422(trees_copy):
    with served(trees_copy) as url:
        answer = httpx.get(f"{url}/trees/kw/documents", params={"offset": 10 ** 30})
    assert answer.status_code == 422 and "offset" in answer.text, answer.text


@pytest.mark.slow
def test_an_update_published_over_an_immutable_old_store_is_done_with_a_warning(trees_copy):
    """The change is published even though the old store cannot be removed: the job says so, not "failed". (The
    tree's store is first made a delta over its old file; the example corpus's store is a few pages, so that delta is
    past its bound, a 64th of its base, and the served update writes a whole store file, whose publication would
    remove the old base: store/segments.py.)"""
    tree = trees_copy / "kw"
    dashrag.update(tree, add=[SourceDocument(id="first.txt", text="A first addition about dense vectors.")])
    old_store = segments.base_of(tree / read_manifest(tree)["store"])
    posted = [{"id": "n.txt", "text": "sparse postings"}, {"id": "bm25.md", "text": "BM25, rewritten."}]
    with served(trees_copy) as url, immutable(old_store):
        job = httpx.post(f"{url}/trees/kw/documents", json={"documents": posted})
        status = finished_job(url, job.json()["job_id"], within_s=300)
        top = httpx.post(f"{url}/trees/kw/query", json={"query": "sparse postings"}).json()["chunks"][0]
    assert status["status"] == "done" and status["counts"]["added"] == 1, status
    assert len(status["warnings"]) == 1 and "published" in status["warnings"][0] and "could not be removed" in \
        status["warnings"][0] and "warning" in status["message"]
    assert top["document_id"] == "n.txt" and old_store.exists()
