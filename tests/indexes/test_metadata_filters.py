"""Metadata filters pushed down into the engines give exactly brute-force filter-then-rank (a property over random
filters on synthetic metadata: numbers, dates, booleans, strings, lists, missing fields), for dense and BM25 nodes on
Qdrant (payload filters) and PostgreSQL (SQL/JSON path WHERE), documents and scores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.documents.corpus import Corpus
from tests.indexes.conftest import bm25_tree, dense_tree
from tests.retrievers.test_metadata_filters import DOCUMENTS, QUERIES, filters, matching_documents

ENGINES = ("in-process", "qdrant", "postgresql")


@pytest.fixture(scope="module", params=["dense", "bm25"])
def trees(request, engine_cache, pg_url, tmp_path_factory):
    corpus = Corpus(tuple(DOCUMENTS))
    folder = tmp_path_factory.mktemp(f"filter-engines-{request.param}")
    if request.param == "dense":
        indexes = {"in-process": None,
                   "qdrant": {"component": "QdrantVectorIndex", "params": {"exact": True}},
                   "postgresql": {"component": "PgVectorIndex", "params": {"url": pg_url}}}  # HNSW + iterative scan
        configs = {name: dense_tree(index, top_k=5) for name, index in indexes.items()}
    else:
        indexes = {"in-process": None, "qdrant": {"component": "QdrantKeywordIndex", "params": {}},
                   "postgresql": {"component": "PgKeywordIndex", "params": {"url": pg_url}}}
        configs = {name: bm25_tree(index, top_k=5) for name, index in indexes.items()}
    built = {name: dashrag.build(config, corpus, folder / name, cache_dir=engine_cache)
             for name, config in configs.items()}
    yield built
    for tree in built.values():
        tree.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=filters, query=st.sampled_from(QUERIES))
def test_every_engine_is_filter_then_rank(trees, raw, query):
    allowed = set(matching_documents(raw))
    reference = trees["in-process"]
    everything, _ = reference.retrieve(query, top_k=len(reference.require_infra().chunks))
    expected = [c for c in everything if c.document_id in allowed][:5]
    for engine in ENGINES:
        found, _ = trees[engine].retrieve(query, filters=raw)
        assert [c.id for c in found] == [c.id for c in expected], engine
        np.testing.assert_allclose([c.score for c in found], [c.score for c in expected], atol=1e-5)


def test_a_string_range_is_sent_to_qdrant_as_the_matching_points(trees):
    """Qdrant's ranges are numeric: {"lang": {"$gt": "de"}} goes as the exact list of matching points."""
    raw = {"lang": {"$gt": "de"}}
    found = {engine: [c.id for c in trees[engine].retrieve("bread recipe", filters=raw)[0]] for engine in ENGINES}
    assert found["qdrant"] == found["in-process"] == found["postgresql"]
    chunks = trees["in-process"].require_infra().chunks
    assert {chunks.by_id(i).document_id for i in found["qdrant"]} <= set(matching_documents(raw))
