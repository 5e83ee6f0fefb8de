"""What the system around a command does to it (docs/security.md, issue 25's minor items), through the CLI in a
subprocess: text that is no text, a full disk, settings and URLs that cannot be parsed, outputs that cannot be
written, edited state, a pipe in place of a manifest, a store in WAL mode. One ``error:`` line and exit 2 (or
the normal answer), never a traceback, never a hang, nothing left behind."""

from __future__ import annotations

import gzip
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.cli.conftest import invoke
from tests.conftest import EXAMPLE_CORPUS, REPO, folder_digest
from tests.fixtures.filesystem import immutable, small_tmpfs


def dashrag(*args, limit_file_bytes: int | None = None, env: dict | None = None, timeout: float = 120):
    def cap() -> None:
        if limit_file_bytes is not None:  # the disk is full for this process: every write past it fails
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    return subprocess.run([sys.executable, "-m", "dashrag.cli.main", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, preexec_fn=cap, env={**os.environ, "PYTHONPATH": str(REPO),
                                                                           **(env or {})})


def one_error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    return lines[0]


# The trees the commands under test read are built in this process (the same `dashrag index`, through typer's
# runner): only the command a test is about runs in a process of its own (docs/testing.md, "Fourth pass").
@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("saved") / "kw"
    result = invoke("index", "keyword", "--corpus", EXAMPLE_CORPUS, "--out", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def scifact_keyword(tmp_path_factory, scifact_subset_file) -> Path:
    """A keyword tree of the first 400 SciFact documents (about 1.5 MB of store), for the full-disk tests."""
    out = tmp_path_factory.mktemp("scifact_keyword") / "kw"
    result = invoke("index", "keyword", "--corpus", scifact_subset_file, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_a_lone_surrogate_in_a_corpus_is_one_error_line_naming_the_line(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"_id": "a", "text": "fine"}\n{"_id": "b", "text": "half \\ud800 a pair"}\n')
    line = one_error_line(dashrag("index", "keyword", "--corpus", corpus, "--out", tmp_path / "out"))
    assert "c.jsonl:2" in line and "lone surrogate (\\ud800)" in line and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_lone_surrogate_in_a_queries_file_is_one_error_line(saved, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "q1", "text": "bm25 \\udc00"}\n')
    assert "q.jsonl:1" in one_error_line(dashrag("query", saved, "--queries", queries))


def test_a_corrupted_gzip_corpus_is_one_error_line(tmp_path):
    corpus = tmp_path / "c.jsonl.gz"
    corpus.write_bytes(gzip.compress(b'{"_id": "a", "text": "x"}\n' * 100)[:60])
    line = one_error_line(dashrag("index", "keyword", "--corpus", corpus, "--out", tmp_path / "out"))
    assert "c.jsonl.gz: cannot be read" in line and not (tmp_path / "out").exists()


def test_a_full_disk_during_index_is_one_error_line_and_leaves_nothing(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": f"document {i} " * 400}) + "\n" for i in range(200)))
    result = dashrag("index", "keyword", "--corpus", corpus, "--out", tmp_path / "out", limit_file_bytes=100_000)
    assert "cannot be written" in one_error_line(result)
    assert not (tmp_path / "out").exists()  # no store, no journal, no folder


def test_a_list_setting_that_is_not_json_is_one_error_line(tmp_path):
    result = dashrag("serve", "--trees", tmp_path, "--port", "0", env={"RAG_CORS_ORIGINS": "http://a.example"},
                     timeout=60)
    assert "cors_origins" in one_error_line(result)


def test_a_malformed_ipv6_store_url_is_one_error_line_without_its_password(tmp_path):
    line = one_error_line(dashrag("index", "keyword", "--corpus", EXAMPLE_CORPUS, "--out", tmp_path / "out",
                                  "--store", "postgresql+psycopg://u:s3cret@[::1:5432/db"))
    assert "host or port cannot be read" in line and "s3cret" not in line and not (tmp_path / "out").exists()


def test_eval_json_into_a_folder_that_cannot_be_written_is_refused_before_evaluating(tmp_path, scifact_dir):
    """/proc refuses new files to root too: the check tries a file, it does not read permission bits."""
    result = dashrag("eval", "tfidf", "--dataset", scifact_dir, "--json", "/proc/report.json", timeout=60)
    assert "--json /proc/report.json" in one_error_line(result) and "cannot be written" in result.stderr


def test_a_state_file_of_another_dtype_is_one_error_line(saved, tmp_path):
    copy = tmp_path / "kw"
    subprocess.run(["cp", "-a", saved, copy], check=True)
    state = next(copy.glob("models/*/doc_ids.npy"))  # the BM25 postings' base (docs/scale.md, "Segments ...")
    np.save(state, np.load(state).astype(np.float32))  # the same size, another dtype
    assert "doc_ids.npy" in one_error_line(dashrag("query", copy, "bm25"))


def test_a_failed_fit_leaves_no_out_folder(tmp_path):
    config = {"component": "BM25Retriever", "params": {"vectorizer": {"component": "BagOfWordsConverter",
                                                                       "params": {"min_df": 1000}}}}
    line = one_error_line(dashrag("index", json.dumps(config), "--corpus", EXAMPLE_CORPUS, "--out", tmp_path / "o"))
    assert "cannot build a vocabulary" in line and not (tmp_path / "o").exists()


def test_a_pipe_in_place_of_the_manifest_is_an_error_not_a_hang(saved, tmp_path):
    copy = tmp_path / "kw"
    subprocess.run(["cp", "-a", saved, copy], check=True)
    (copy / "dashrag.json").unlink()
    os.mkfifo(copy / "dashrag.json")
    assert "not a regular file" in one_error_line(dashrag("query", copy, "bm25", timeout=60))


def test_loading_a_store_in_wal_mode_writes_no_file(saved, tmp_path):
    copy = tmp_path / "kw"
    subprocess.run(["cp", "-a", saved, copy], check=True)
    store = next(copy.glob("store-*.sqlite"))
    with sqlite3.connect(store) as connection:
        assert connection.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    connection.close()
    before = sorted(p.name for p in copy.iterdir())
    answered = dashrag("query", copy, "bm25")
    assert answered.returncode == 0, answered.stderr
    assert sorted(p.name for p in copy.iterdir()) == before  # no -wal, no -shm


# -- issue 38: writes the machine refuses, through the CLI ----------------------------------------------
def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def tree_copy(saved, tmp_path) -> Path:
    copy = tmp_path / "kw"
    shutil.copytree(saved, copy)
    return copy


def test_add_into_an_immutable_folder_is_one_error_line_and_changes_nothing(tree_copy, tmp_path):
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "n.txt").write_text("sparse postings lists")
    before = folder_digest(tree_copy)
    with immutable(tree_copy):
        line = one_error_line(dashrag("add", tree_copy, "--corpus", tmp_path / "more"))
    assert "read-only or immutable" in line
    assert folder_digest(tree_copy) == before


@pytest.mark.slow
def test_add_on_a_nearly_full_disk_is_one_error_line_and_leaves_no_new_store(scifact_dir, scifact_keyword, tmp_path):
    """A tmpfs with 48 KB free once the tree is on it: the update's store (a delta of the 100 documents added,
    store/segments.py; a copy of the whole store before deltas, which 2 MB did not hold) does not fit."""
    built = scifact_keyword
    with gzip.open(scifact_dir / "corpus.jsonl.gz", "rt", encoding="utf-8") as corpus:
        lines = [line for _, line in zip(range(500), corpus)][400:]
    (tmp_path / "more.jsonl").write_text("".join(lines), encoding="utf-8")
    # what the tree takes on a tmpfs: each file in whole 4 KB pages (the keyword segments' many small files), each
    # folder one page
    size_kb = sum(4 * -(-p.stat().st_size // 4096) if p.is_file() else 4 for p in built.rglob("*"))
    with small_tmpfs(tmp_path / "disk", f"{size_kb + 48}k") as disk:
        shutil.copytree(built, disk / "kw")
        before = folder_digest(disk / "kw")
        line = one_error_line(dashrag("add", disk / "kw", "--corpus", tmp_path / "more.jsonl"))
        after, left = folder_digest(disk / "kw"), names(disk / "kw")
        answer = dashrag("query", disk / "kw", "cancer cells", "--json")
    assert "cannot be written" in line and "free some space" in line
    assert after == before and len([n for n in left if n.startswith("store-")]) == 1, left
    assert answer.returncode == 0 and json.loads(answer.stdout)["results"]


def test_query_with_a_malformed_ipv6_store_url_is_one_error_line_without_its_password(saved):
    line = one_error_line(dashrag("query", saved, "bm25", "--store", "postgresql+psycopg://u:s3cret@[::1:5432/db"))
    assert "host or port cannot be read" in line and "s3cret" not in line


@pytest.mark.slow
def test_index_overwrite_over_an_immutable_old_store_is_one_error_line_and_leaves_no_tmp(tree_copy):
    before = folder_digest(tree_copy)
    with immutable(next(tree_copy.glob("store-*.sqlite"))):
        line = one_error_line(dashrag("index", "keyword", "--corpus", EXAMPLE_CORPUS, "--out", tree_copy,
                                      "--overwrite"))
    assert "read-only or immutable" in line
    assert folder_digest(tree_copy) == before and not [n for n in names(tree_copy) if n.endswith(".tmp")]


@pytest.mark.slow
def test_index_overwrite_on_a_full_disk_is_one_error_line_and_leaves_no_tmp(scifact_subset_file, scifact_keyword,
                                                                           tmp_path):
    """About 2.3 MB free: the build's temporary store (1.5 MB) fits, its copy under the store's name does not."""
    built = scifact_keyword
    # what the tree takes on a tmpfs: each file in whole 4 KB pages (the keyword segments' many small files), each
    # folder one page
    size_kb = sum(4 * -(-p.stat().st_size // 4096) if p.is_file() else 4 for p in built.rglob("*"))
    with small_tmpfs(tmp_path / "disk", f"{size_kb + 2300}k") as disk:
        shutil.copytree(built, disk / "kw")
        before = folder_digest(disk / "kw")
        line = one_error_line(dashrag("index", "keyword", "--corpus", scifact_subset_file, "--out", disk / "kw",
                                      "--overwrite"))
        after, left = folder_digest(disk / "kw"), names(disk / "kw")
    assert "cannot be written" in line
    assert after == before and not [n for n in left if n.endswith(".tmp")], left
