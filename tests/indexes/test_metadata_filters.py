"""Metadata filters pushed down into the engines give exactly brute-force filter-then-rank (a property over random
filters on synthetic metadata: numbers, dates, booleans, strings, lists, missing fields), for dense and BM25 nodes on
Qdrant (payload filters) and PostgreSQL (SQL/JSON path WHERE), documents and scores."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.retrievers.test_metadata_filters import DOCUMENTS, QUERIES, filters, matching_documents

ENGINE_CORPUS = DOCUMENTS  # the corpus of conftest.engine_trees: synthetic metadata

ENGINES = ("in-process", "qdrant", "postgresql")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=filters, query=st.sampled_from(QUERIES))
def test_every_engine_is_filter_then_rank(engine_trees, raw, query):
    allowed = set(matching_documents(raw))
    reference = engine_trees["in-process"]
    everything, _ = reference.retrieve(query, top_k=len(reference.require_infra().chunks))
    expected = [c for c in everything if c.document_id in allowed][:5]
    for engine in ENGINES:
        found, _ = engine_trees[engine].retrieve(query, filters=raw)
        assert [c.id for c in found] == [c.id for c in expected], engine
        np.testing.assert_allclose([c.score for c in found], [c.score for c in expected], atol=1e-5)


def test_a_string_range_is_sent_to_qdrant_as_the_matching_points(engine_trees):
    """Qdrant's ranges are numeric: {"lang": {"$gt": "de"}} goes as the exact list of matching points."""
    raw = {"lang": {"$gt": "de"}}
    found = {engine: [c.id for c in engine_trees[engine].retrieve("bread recipe", filters=raw)[0]]
             for engine in ENGINES}
    assert found["qdrant"] == found["in-process"] == found["postgresql"]
    chunks = engine_trees["in-process"].require_infra().chunks
    assert {chunks.by_id(i).document_id for i in found["qdrant"]} <= set(matching_documents(raw))
