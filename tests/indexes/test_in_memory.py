"""InMemoryVectorIndex: the default index of a dense node keeps today's behaviour and saved layout."""

from __future__ import annotations

import numpy as np

import dashrag
from dashrag.core.persistence import read_manifest
from dashrag.core.restriction import Restriction
from dashrag.indexes.in_memory import InMemoryVectorIndex
from tests.indexes.conftest import dense_tree, ranked_ids


def test_a_dense_node_without_an_index_gets_the_in_process_one():
    from dashrag.core.factory import build_component

    tree = build_component(dense_tree(), "retriever")
    assert isinstance(tree.index, InMemoryVectorIndex)
    assert tree.to_config()["params"]["index"] == {"component": "InMemoryVectorIndex", "params": {}}


def test_in_process_search_is_the_exact_cosine_top_k(in_process, engine_subset):
    queries = list(engine_subset.queries.values())[:5]
    vectors = in_process.embed_queries(queries)
    expected = np.argsort(-(vectors @ in_process.vectors.T), axis=1, kind="stable")[:, :10]
    ids = in_process.require_infra().chunks.ids
    assert ranked_ids(in_process, queries) == [ids[row].tolist() for row in expected]


def test_a_saved_in_process_tree_keeps_its_vectors_in_the_dense_folder(in_process, tmp_path):
    in_process.save(tmp_path / "saved")
    files = read_manifest(tmp_path / "saved")["files"]
    assert "nodes/root/vectors.npy" in files and "nodes/root/norms.npy" in files
    loaded = dashrag.load(tmp_path / "saved")
    query = "vitamin D deficiency"
    assert ranked_ids(loaded, [query]) == ranked_ids(in_process, [query])


def test_the_restriction_applies_before_top_k_in_process(in_process, engine_subset):
    allowed = engine_subset.corpus.documents[0].id
    chunks, _ = in_process.retrieve("cancer", restriction=Restriction.to_documents([allowed]))
    assert chunks and {c.document_id for c in chunks} == {allowed}
