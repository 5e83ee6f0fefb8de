"""dashrag.build_tree, the one build of every face: all or nothing, the record before the switch, its stages."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

import dashrag
from dashrag.api import build_tree
from dashrag.store.store import Store, sqlite_url
from tests.fixtures.save_phases import BUILD_PHASES, first_write_after, kill_in_phase

TFIDF = {"component": "TFIDFRetriever", "params": {"top_k": 3}}
BM25 = {"component": "BM25Retriever", "params": {"top_k": 3}}
QUERY = "dense vectors and cosine"


class Cancelled(Exception):
    pass


def answer(folder: Path) -> list[tuple[str, float]]:
    tree = dashrag.load(folder)
    try:
        return [(c.document_id, round(c.score, 6)) for c in tree.retrieve(QUERY)[0]]
    finally:
        tree.close()


def build_files(folder: Path) -> list[str]:
    """What a build leaves that is not a saved tree's own file: temporary stores, partial snapshots."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".partial"))


def cancel_at(stage: str):
    def progress(now: str, done: int = 0, total: int | None = None) -> None:
        if now == stage:
            raise Cancelled(stage)
    return progress


def test_the_record_is_in_the_saved_store_with_the_trees_name(tmp_path, example_corpus):
    report = build_tree(TFIDF, example_corpus, tmp_path / "tree", name="mine")
    manifest = json.loads((tmp_path / "tree" / "dashrag.json").read_text())
    store = Store(sqlite_url(tmp_path / "tree" / manifest["store"]), read_only=True)
    try:
        (record,) = store.retriever_records()
    finally:
        store.close()
    assert (record.id, record.name, record.folder) == (report.record_id, "mine", str((tmp_path / "tree").resolve()))


def test_the_report_counts_the_documents_and_chunks(tmp_path, example_corpus):
    report = build_tree(TFIDF, example_corpus, tmp_path / "tree")
    assert report.documents == len(example_corpus)
    assert report.chunks == len(dashrag.load(tmp_path / "tree").require_infra().chunks)


def test_the_stages_are_reported_in_order(tmp_path, example_corpus):
    heard: list[str] = []
    build_tree(TFIDF, example_corpus, tmp_path / "tree", progress=lambda stage, done=0, total=None: heard.append(stage))
    firsts = list(dict.fromkeys(heard))
    assert firsts == ["chunking", "storing", "fitting", "saving"]


@pytest.mark.parametrize("stage", ["storing", "fitting", "saving"])
def test_a_cancelled_first_build_leaves_no_folder_where_there_was_none(tmp_path, example_corpus, stage):
    with pytest.raises(Cancelled):
        build_tree(TFIDF, example_corpus, tmp_path / "tree", progress=cancel_at(stage))
    assert not (tmp_path / "tree").exists()


@pytest.mark.parametrize("stage", ["storing", "fitting", "saving"])
def test_a_cancelled_build_into_an_empty_folder_leaves_it_empty(tmp_path, example_corpus, stage):
    (tmp_path / "tree").mkdir()
    with pytest.raises(Cancelled):
        build_tree(TFIDF, example_corpus, tmp_path / "tree", progress=cancel_at(stage))
    assert sorted(p.name for p in (tmp_path / "tree").iterdir() if not p.name.startswith(".dashrag")) == []


@pytest.mark.parametrize("stage", ["fitting", "saving"])
def test_a_cancelled_overwrite_keeps_the_previous_tree(tmp_path, example_corpus, stage):
    folder = tmp_path / "tree"
    build_tree(TFIDF, example_corpus, folder)
    before = answer(folder)
    with pytest.raises(Cancelled):
        build_tree(BM25, example_corpus, folder, progress=cancel_at(stage))
    assert answer(folder) == before and build_files(folder) == []


@pytest.mark.slow
def test_a_kill_at_any_moment_of_an_overwrite_leaves_the_old_or_the_new_tree(tmp_path, example_corpus):
    """SIGKILL `dashrag index --overwrite` once in each phase of its run: every later load answers as the tree
    before or the tree after (the record is written into the new store before the manifest switches)."""
    folder = tmp_path / "tree"
    build_tree(TFIDF, example_corpus, folder)
    before = answer(folder)
    command = [sys.executable, "-m", "dashrag.cli.main", "index", json.dumps(BM25), "--corpus",
               str(example_corpus_path()), "--out", str(folder), "--overwrite"]
    start = partial(subprocess.Popen, command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    before_write_s = first_write_after(start, folder) / 2
    after = answer(folder)
    assert after != before
    for phase in BUILD_PHASES:  # one kill in each phase of the build's save (tests/fixtures/save_phases.py)
        build_tree(TFIDF, example_corpus, folder)  # the old tree again
        killed_in = kill_in_phase(start, folder, phase, before_write_s)
        assert answer(folder) in (before, after), f"killed {killed_in}: a mix of the old and the new tree"


def example_corpus_path() -> Path:
    return Path(__file__).resolve().parents[1] / "examples" / "corpus"
