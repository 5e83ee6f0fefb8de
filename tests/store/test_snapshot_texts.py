"""A PostgreSQL-stored tree reads its chunks' texts when they are shown, from the snapshot its load holds
(store/snapshot_texts.py): the texts of its load whatever another writer commits since, no table lock held, and a
clear error when the server has ended the snapshot. A real PostgreSQL on loopback."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import dashrag
from dashrag.documents.corpus import Corpus
from dashrag.errors import PersistenceError
from dashrag.store.snapshot_texts import SnapshotChunkTexts
from tests.core.test_updating import CHUNKER, QUERIES, answers, assert_same_answers, bm25, changed, rebuilt_answers
from tests.fixtures.postgres import run_sql

TREE = bm25("okapi")
HOLDERS = ("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
           "AND query = 'SELECT pg_export_snapshot()'")  # a loaded tree's snapshot holder


def _saved(documents, folder: Path, store: str) -> Path:
    dashrag.build_tree(TREE, Corpus(tuple(documents)), folder, chunker=CHUNKER, store_url=store)
    return folder


def _stored_texts(store: str) -> list[str]:
    return [t for (t,) in run_sql(store, "SELECT text FROM chunks ORDER BY id")]


def test_a_loaded_tree_shows_the_texts_of_its_load_after_another_writer_removed_and_replaced_them(
        abstracts, tmp_path, store_db):
    folder = _saved(abstracts[:6], tmp_path / "tree", store_db)
    loaded_with = _stored_texts(store_db)
    tree = dashrag.load(folder, store_url=store_db)
    try:
        assert isinstance(tree.require_infra().chunks.chunks.texts, SnapshotChunkTexts)  # no text read yet
        dashrag.update(folder, add=[changed(abstracts[1]), abstracts[7]], remove=[abstracts[0].id],
                       store_url=store_db)
        assert _stored_texts(store_db) != loaded_with  # the database changed in place
        assert tree.require_infra().chunks.texts == loaded_with  # every text read now: the load's
        assert_same_answers(answers(tree, QUERIES),
                            rebuilt_answers(TREE, abstracts[:6], tmp_path / "rebuilt", QUERIES))
    finally:
        tree.close()


def test_a_loaded_tree_holds_no_lock_on_the_stores_tables(abstracts, tmp_path, store_db):
    """What it holds is a snapshot, not the tables: an update's ``ALTER TABLE`` (a store older than a column) does
    not wait for the trees that serve the store."""
    folder = _saved(abstracts[:4], tmp_path / "tree", store_db)
    tree = dashrag.load(folder, store_url=store_db)
    try:
        assert tree.require_infra().chunks.texts_at([0])[0]  # a text read
        locks = run_sql(store_db, "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                                  "WHERE c.relname IN ('chunks', 'documents', 'store_info')")
        assert locks == [(0,)]
        assert len(run_sql(store_db, HOLDERS)) == 1  # and the snapshot is held
    finally:
        tree.close()


def test_a_tree_dropped_without_close_ends_its_snapshot(abstracts, tmp_path, store_db):
    folder = _saved(abstracts[:4], tmp_path / "tree", store_db)
    tree = dashrag.load(folder, store_url=store_db)
    assert len(run_sql(store_db, HOLDERS)) == 1
    del tree
    gc.collect()
    assert run_sql(store_db, HOLDERS) == []


def test_a_text_read_after_the_server_ended_the_trees_snapshot_is_a_clear_error(abstracts, tmp_path, store_db):
    folder = _saved(abstracts[:4], tmp_path / "tree", store_db)
    tree = dashrag.load(folder, store_url=store_db)
    try:
        (holder,) = run_sql(store_db, HOLDERS)
        run_sql(store_db, f"SELECT pg_terminate_backend({holder[0]})")
        with pytest.raises(PersistenceError, match="the snapshot this tree was loaded with is gone.*load the tree "
                                                   "again"):
            tree.require_infra().chunks.texts_at([0])
    finally:
        tree.close()
