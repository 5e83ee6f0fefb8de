"""Updating a tree whose store is PostgreSQL (``--store postgresql://...``; store/external_change.py,
docs/updating.md): any sequence of adds, replaces and removes answers as a rebuild; the change is one
transaction committed between the new snapshot and the manifest's switch; two writers serialise (the store's
advisory lock, and a change planned on a corpus the store no longer holds is refused); and kill -9 at any
moment of ``dashrag add --store`` leaves the old tree or the new one. A real PostgreSQL on loopback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import dashrag
from dashrag.core.persistence import PENDING_MANIFEST_NAME, read_manifest
from dashrag.documents.corpus import Corpus
from dashrag.errors import PersistenceError
from dashrag.store.external_change import writer_lock
from dashrag.store.store import Store
from tests.cli.conftest import invoke
from tests.core.test_updating import (
    CHUNKER,
    QUERIES,
    answers,
    assert_same_answers,
    bm25,
    changed,
    expected_after,
    rebuilt_answers,
    steps,
)
from tests.fixtures.postgres import drop_database, new_database, run_sql
from tests.fixtures.save_phases import EXTERNAL_STORE_PHASES, first_write_after, kill_in_phase

TREE = bm25("okapi")


def _saved(documents, folder: Path, store: str, config: dict = TREE) -> Path:
    dashrag.build_tree(config, Corpus(tuple(documents)), folder, chunker=CHUNKER, store_url=store)
    return folder


def _stored_documents(store: str) -> list[tuple[str, str]]:
    opened = Store(store, read_only=True)
    try:
        return [(d.id, d.text) for d in opened.read_documents()]
    finally:
        opened.close()


def _loaded_answers(folder: Path, store: str, queries=QUERIES) -> list:
    tree = dashrag.load(folder, store_url=store)
    try:
        return answers(tree, queries)
    finally:
        tree.close()


# -- the property ------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", ["in process", pytest.param("PgKeywordIndex", marks=pytest.mark.slow)])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_on_a_postgresql_store_answer_as_rebuilds(abstracts, tmp_path, pg_url, index, sequence):
    """``PgKeywordIndex``: the index's tables on the same server, replaced by each update (docs/updating.md)."""
    config = TREE if index == "in process" else {
        **TREE, "params": {**TREE["params"], "index": {"component": "PgKeywordIndex", "params": {"url": pg_url}}}}
    store = new_database(pg_url)
    try:
        run = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
        start = abstracts[:12]
        folder = _saved(start, run / "tree", store, config)
        documents = {d.id: d for d in start}
        for step in sequence:
            add, remove = expected_after(documents, step, abstracts[12:] if step[0] == "add" else abstracts)
            if add or remove:
                dashrag.update(folder, add=add, remove=remove, store_url=store)
        assert_same_answers(_loaded_answers(folder, store),
                            rebuilt_answers(TREE, list(documents.values()), run / "rebuilt", QUERIES))
        # the store, changed in place, holds the resulting documents in their order; the folder no pending manifest
        assert _stored_documents(store) == [(d.id, d.text) for d in documents.values()]
        assert not (folder / PENDING_MANIFEST_NAME).exists() and not list(folder.glob("store-*.sqlite"))
    finally:
        drop_database(pg_url, store)


def test_a_postgresql_stored_tree_loads_its_saved_columns_and_the_stores_texts_and_reads_rows_when_they_differ(
        abstracts, tmp_path, store_db):
    """The snapshot holds the chunk columns for an external store too: a load whose store records the manifest's
    corpus maps them and reads the chunks' texts alone (core/saved_tree.py ``_external_columns``), and answers as
    the load that reads every row; a store whose chunks are not the columns' (a row deleted behind the tree's back,
    its fingerprint left) is read row by row, and refused as another corpus."""
    folder = _saved(abstracts[:6], tmp_path / "tree", store_db)
    assert read_manifest(folder)["chunk_columns"]
    dashrag.update(folder, add=[abstracts[7]], store_url=store_db)
    tree = dashrag.load(folder, store_url=store_db)
    try:
        mapped = answers(tree, QUERIES)
        assert type(tree.require_infra().chunks.chunks).__name__ == "StoredChunks"
    finally:
        tree.close()
    read = dashrag.load(folder, store_url=store_db, full_check=True)  # every row read and hashed
    try:
        assert answers(read, QUERIES) == mapped
    finally:
        read.close()
    assert_same_answers(mapped, rebuilt_answers(TREE, [*abstracts[:6], abstracts[7]], tmp_path / "rebuilt", QUERIES))
    run_sql(store_db, "DELETE FROM chunks WHERE id = (SELECT max(id) FROM chunks)")
    with pytest.raises(PersistenceError, match="saved for corpus"):
        dashrag.load(folder, store_url=store_db)


# -- writers -----------------------------------------------------------------------------------------
def test_a_change_planned_on_a_corpus_the_store_no_longer_holds_is_refused_and_changes_nothing(
        abstracts, tmp_path, store_db):
    folder = _saved(abstracts[:6], tmp_path / "tree", store_db)
    first, second = dashrag.load(folder, store_url=store_db), dashrag.load(folder, store_url=store_db)
    try:
        first.add_documents([abstracts[7]])
        first.save(folder)
        published = (folder / "dashrag.json").read_bytes()
        second.remove_documents([abstracts[0].id])
        with pytest.raises(PersistenceError, match="no longer holds the corpus this update was planned on"):
            second.save(tmp_path / "other")
    finally:
        first.close()
        second.close()
    assert (folder / "dashrag.json").read_bytes() == published
    assert [i for i, _ in _stored_documents(store_db)] == [d.id for d in [*abstracts[:6], abstracts[7]]]
    assert _loaded_answers(folder, store_db)[0]  # the published tree loads on the store, which holds its corpus


def _dashrag(*args: object, **env: str) -> subprocess.Popen:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env}
    return subprocess.Popen([sys.executable, "-m", "dashrag.cli.main", *map(str, args)], env=environment,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _corpus_file(documents, path: Path) -> Path:
    path.write_text("".join(json.dumps({"_id": d.id, "title": d.title, "text": d.text}) + "\n" for d in documents),
                    encoding="utf-8")
    return path


def test_a_second_writer_waits_for_the_store_lock_then_runs_on_what_was_published(abstracts, tmp_path, store_db):
    folder = _saved(abstracts[:6], tmp_path / "tree", store_db)
    more = _corpus_file(abstracts[6:8], tmp_path / "more.jsonl")
    with writer_lock(store_db):  # another writer of this database holds it
        waiting = _dashrag("add", folder, "--corpus", more, "--store", store_db)
        time.sleep(2)
        assert waiting.poll() is None  # still waiting for the lock
        assert [i for i, _ in _stored_documents(store_db)] == [d.id for d in abstracts[:6]]
    assert waiting.wait(timeout=120) == 0, waiting.stderr.read() if waiting.stderr else ""
    assert [i for i, _ in _stored_documents(store_db)] == [d.id for d in abstracts[:8]]


def test_a_writer_that_cannot_get_the_lock_in_time_is_one_error_line_and_changes_nothing(
        abstracts, tmp_path, store_db):
    folder = _saved(abstracts[:6], tmp_path / "tree", store_db)
    before = read_manifest(folder)
    with writer_lock(store_db):
        refused = _dashrag("remove", folder, abstracts[0].id, "--store", store_db, DASHRAG_SAVE_LOCK_TIMEOUT="1")
        assert refused.wait(timeout=120) == 2
        stderr = refused.stderr.read() if refused.stderr else ""
    assert "another update held its lock" in stderr and stderr.count("\n") == 1, stderr
    assert read_manifest(folder) == before
    assert [i for i, _ in _stored_documents(store_db)] == [d.id for d in abstracts[:6]]


@pytest.mark.slow
def test_two_adds_at_once_on_one_postgresql_stored_tree_both_land(abstracts, tmp_path, store_db):
    folder = _saved(abstracts[:6], tmp_path / "tree", store_db)
    first = _corpus_file(abstracts[6:9], tmp_path / "first.jsonl")
    second = _corpus_file(abstracts[9:12], tmp_path / "second.jsonl")
    writers = [_dashrag("add", folder, "--corpus", corpus, "--store", store_db) for corpus in (first, second)]
    assert [w.wait(timeout=300) for w in writers] == [0, 0]
    assert sorted(i for i, _ in _stored_documents(store_db)) == sorted(d.id for d in abstracts[:12])
    tree = dashrag.load(folder, store_url=store_db)
    try:
        assert sorted(tree.require_infra().chunks.document_ids) == sorted(d.id for d in abstracts[:12])
    finally:
        tree.close()


# -- crash safety: kill -9 ---------------------------------------------------------------------------
KILL_AFTER_COMMIT = """
import os, signal, sys
from pathlib import Path
import dashrag.core.persistence as persistence
from dashrag.cli.main import main

write = persistence.atomic_write_json

def killed_at_the_switch(path, data):  # the store is committed, the manifest not switched yet
    if Path(path).name == persistence.MANIFEST_NAME:
        os.kill(os.getpid(), signal.SIGKILL)
    write(path, data)

persistence.atomic_write_json = killed_at_the_switch
sys.argv = ["dashrag", *sys.argv[1:]]
main()
"""
KILL_BEFORE_COMMIT = """
import os, signal, sys
from dashrag.store.external_change import StoreChange
from dashrag.cli.main import main

def killed_before_the_commit(self):  # the snapshot and the pending manifest are written, the store not changed
    os.kill(os.getpid(), signal.SIGKILL)

StoreChange.commit = killed_before_the_commit
sys.argv = ["dashrag", *sys.argv[1:]]
main()
"""


def _rerun_add(folder: Path, more: Path, store: str, killed_in: str) -> None:
    """The killed ``dashrag add --store`` run again to its end. Only the killed commands need a process of their
    own: this is the same command through typer's runner, in the test's process (docs/testing.md, "Ninth pass")."""
    rerun = invoke("add", folder, "--corpus", more, "--store", store)
    assert rerun.exit_code == 0, f"killed {killed_in}: {rerun.output}"


def _states(folder: Path, store: str) -> list:
    return _loaded_answers(folder, store, QUERIES[:3])


@pytest.mark.slow
def test_kill_9_at_any_moment_of_an_add_on_postgresql_leaves_the_old_or_the_new_tree(abstracts, tmp_path, pg_url):
    base_store = new_database(pg_url)
    victims: list[str] = []
    try:
        base = _saved(abstracts[:30], tmp_path / "base", base_store)
        more = _corpus_file([*abstracts[30:60], changed(abstracts[3])], tmp_path / "more.jsonl")
        old = _states(base, base_store)

        def copy(name: str) -> tuple[Path, str]:  # the folder and a copy of its database (PostgreSQL's template)
            store = new_database(pg_url, template=base_store.rsplit("/", 1)[1])
            victims.append(store)
            return Path(shutil.copytree(base, tmp_path / name)), store

        complete, complete_store = copy("complete")
        before_write_s = first_write_after(partial(_dashrag, "add", complete, "--corpus", more, "--store",
                                                   complete_store), complete) / 2
        new = _states(complete, complete_store)
        assert new != old

        # killed right after the commit, before the switch: the pending manifest rolls forward
        folder, store = copy("at-the-switch")
        killed = subprocess.run([sys.executable, "-c", KILL_AFTER_COMMIT, "add", str(folder), "--corpus", str(more),
                                 "--store", store], capture_output=True, timeout=300)
        assert killed.returncode == -signal.SIGKILL
        assert (folder / PENDING_MANIFEST_NAME).exists() and _states(folder, store) == new

        # killed with the pending manifest written and the store not changed: the old tree, which it names
        folder, store = copy("before-the-commit")
        killed = subprocess.run([sys.executable, "-c", KILL_BEFORE_COMMIT, "add", str(folder), "--corpus", str(more),
                                 "--store", store], capture_output=True, timeout=300)
        assert killed.returncode == -signal.SIGKILL
        assert (folder / PENDING_MANIFEST_NAME).exists() and _states(folder, store) == old
        _rerun_add(folder, more, store, "before the commit")
        assert _states(folder, store) == new and not (folder / PENDING_MANIFEST_NAME).exists()

        # killed once in each of the other phases of the save (tests/fixtures/save_phases.py)
        for attempt, phase in enumerate(EXTERNAL_STORE_PHASES):
            folder, store = copy(f"victim-{attempt}")
            killed_in = kill_in_phase(partial(_dashrag, "add", folder, "--corpus", more, "--store", store), folder,
                                      phase, before_write_s)
            assert _states(folder, store) in (old, new), f"killed {killed_in}: a mix of the old and the new tree"
            # the killed update can be run again, and it completes to the new tree
            _rerun_add(folder, more, store, killed_in)
            assert _states(folder, store) == new and not (folder / PENDING_MANIFEST_NAME).exists()
    finally:
        for store in [base_store, *victims]:
            drop_database(pg_url, store)


@pytest.mark.slow
def test_loads_during_updates_on_postgresql_get_the_old_or_the_new_tree(abstracts, tmp_path, store_db):
    """A reader loading while ``dashrag add --store`` runs (its store read is one snapshot, REPEATABLE READ;
    a load between the commit and the switch takes the pending manifest) never fails and never mixes."""
    folder = _saved(abstracts[:30], tmp_path / "tree", store_db)
    more = _corpus_file(abstracts[30:60], tmp_path / "more.jsonl")
    old = _states(folder, store_db)
    seen = []
    writer = _dashrag("add", folder, "--corpus", more, "--store", store_db)
    while writer.poll() is None:
        seen.append(_states(folder, store_db))
    assert writer.returncode == 0, writer.stderr.read() if writer.stderr else ""
    new = _states(folder, store_db)
    assert new != old and len(seen) >= 3
    assert all(state in (old, new) for state in seen)


@pytest.mark.slow
def test_sync_with_store_brings_a_postgresql_stored_tree_in_line_with_its_folder(tmp_path, store_db):
    from typer.testing import CliRunner

    from dashrag.cli.main import app

    files = tmp_path / "files"
    files.mkdir()
    for name, body in {"a.md": "proteins fold in cells", "b.md": "vitamin D and bones", "c.md": "mice genes"}.items():
        (files / name).write_text(body, encoding="utf-8")
    runner = CliRunner()
    built = runner.invoke(app, ["index", "keyword", "--corpus", str(files), "--out", str(tmp_path / "t"),
                                "--store", store_db])
    assert built.exit_code == 0, built.output
    (files / "b.md").unlink()
    (files / "d.md").write_text("blood pressure treatment", encoding="utf-8")
    synced = runner.invoke(app, ["sync", str(tmp_path / "t"), str(files), "--store", store_db])
    assert synced.exit_code == 0, synced.output
    assert "1 added" in synced.output and "1 removed" in synced.output
    assert [i for i, _ in _stored_documents(store_db)] == ["a.md", "c.md", "d.md"]
    tree = dashrag.load(tmp_path / "t", store_url=store_db)
    try:
        assert tree.retrieve("blood pressure")[0][0].document_id == "d.md"
    finally:
        tree.close()
