"""Trees saved by the code before Qdrant Edge (qdrant-client's local mode) still load, answer as the same tree
in-process does, and keep their engine when saved again (the documented choice: read both, no migration)."""

from __future__ import annotations

import json
import shutil

import pytest

import dashrag
from dashrag.core.persistence import read_manifest
from dashrag.documents.corpus import Corpus
from tests.boolean.corpus_fixture import load_documents
from tests.fixtures.scifact import Subset
from tests.indexes.conftest import assert_answers_like_in_process, bm25_tree, dense_tree

QUERIES = {"q1": "asylum appeal hearing", "q2": "cleaning the kitchen floor", "q3": "family reunification in Iraq",
           "q4": "bread"}


@pytest.fixture(scope="module")
def categorised() -> Subset:
    return Subset(corpus=Corpus(tuple(load_documents())), queries=QUERIES, qrels={})


def reference_of(folder) -> dict:
    return json.loads((folder / read_manifest(folder)["snapshot"] / "nodes/root/index.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dense", "bm25"])
def test_a_local_mode_tree_loads_and_answers_like_in_process(kind, local_mode_trees, categorised, tmp_path):
    assert "embedded_engine" not in reference_of(local_mode_trees[kind])  # what the old code wrote
    assert (local_mode_trees[kind] / "qdrant" / "meta.json").is_file()  # qdrant-client's local-mode layout
    in_process = dashrag.build((dense_tree if kind == "dense" else bm25_tree)(), categorised.corpus, tmp_path)
    loaded = dashrag.load(local_mode_trees[kind])
    try:
        assert "qdrant-client local mode" in loaded.index.where()
        assert_answers_like_in_process(loaded, in_process, categorised)
    finally:
        loaded.close()
        in_process.close()


@pytest.mark.slow
def test_a_local_mode_tree_saved_again_keeps_its_engine(local_mode_trees, categorised, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(local_mode_trees["bm25"], folder)
    tree = dashrag.load(folder)
    try:
        expected = [[c.id for c in chunks] for chunks, _ in tree.retrieve_batch(list(QUERIES.values()))]
        tree.save(folder)
    finally:
        tree.close()
    assert reference_of(folder)["embedded_engine"] == "qdrant-client-local"
    assert not (folder / "qdrant" / "edge").exists()
    again = dashrag.load(folder)
    try:
        assert [[c.id for c in chunks] for chunks, _ in again.retrieve_batch(list(QUERIES.values()))] == expected
    finally:
        again.close()


def test_a_new_embedded_tree_records_edge_as_its_engine(categorised, tmp_path):
    tree = dashrag.build(bm25_tree({"component": "QdrantKeywordIndex", "params": {}}), categorised.corpus, tmp_path)
    tree.save(tmp_path)
    tree.close()
    assert reference_of(tmp_path)["embedded_engine"] == "edge"
    assert (tmp_path / "qdrant" / "edge").is_dir() and not (tmp_path / "qdrant" / "meta.json").exists()
