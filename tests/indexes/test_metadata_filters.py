"""Metadata filters pushed down into the engines give exactly brute-force filter-then-rank (a property over random
filters on synthetic metadata: numbers, dates, booleans, strings, lists, missing fields), for dense and BM25 nodes on
Qdrant (payload filters) and PostgreSQL (SQL/JSON path WHERE), documents and scores; and composites (Parallel,
Sequential, MMR) over engine leaves give their brute-force reference (tests/retrievers/filter_reference.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.documents.corpus import Corpus
from tests.indexes.conftest import FAST_ONNX, bm25_tree, dense_tree
from tests.retrievers.filter_reference import assert_same_answer, reference
from tests.retrievers.test_metadata_filters import DOCUMENTS, QUERIES, filters, matching_documents

ENGINE_CORPUS = DOCUMENTS  # the corpus of conftest.engine_trees: synthetic metadata

ENGINES = ("in-process", "qdrant", "postgresql")


@pytest.mark.slow
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


# -- composites over engine leaves ------------------------------------------------------------------------------
def composites(dense_index: dict | None, keyword_index: dict | None) -> dict[str, dict]:
    """Parallel, Sequential and MMR whose leaves live on one engine (None: in process)."""
    def leaves(top_k: int) -> list[dict]:
        return [bm25_tree(keyword_index, top_k=top_k), dense_tree(dense_index, top_k=top_k)]

    return {
        "parallel-rrf": {"component": "ParallelRetriever", "params": {"children": leaves(8), "merge_strategy": "rrf",
                                                                      "top_k": 5}},
        "parallel-relative": {"component": "ParallelRetriever", "params": {
            "children": leaves(6), "merge_strategy": "relative_score", "weights": [1, 2]}},
        "sequential": {"component": "SequentialRetriever", "params": {
            "children": [bm25_tree(keyword_index, top_k=12), dense_tree(dense_index, top_k=5)]}},
        "mmr": {"component": "MMRRerankerRetriever", "params": {
            "children": [dense_tree(dense_index, top_k=10)], "top_k": 4, "embedding": FAST_ONNX}},
    }


@pytest.fixture(scope="module")
def composite_trees(engine_cache, pg_url, tmp_path_factory) -> Iterator[dict[str, dict]]:
    indexes = {"in-process": (None, None),
               "qdrant": ({"component": "QdrantVectorIndex", "params": {"exact": True}},
                          {"component": "QdrantKeywordIndex", "params": {}}),
               "postgresql": ({"component": "PgVectorIndex", "params": {"url": pg_url}},
                              {"component": "PgKeywordIndex", "params": {"url": pg_url}})}
    folder = tmp_path_factory.mktemp("filtered-engine-composites")
    corpus = Corpus(tuple(DOCUMENTS))
    built = {engine: {name: dashrag.build(config, corpus, folder / engine / name, cache_dir=engine_cache)
                      for name, config in composites(*pair).items()} for engine, pair in indexes.items()}
    yield built
    for trees in built.values():
        for tree in trees.values():
            tree.close()


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=filters, query=st.sampled_from(QUERIES))
def test_a_composite_over_engine_leaves_is_the_in_process_reference(composite_trees, raw, query):
    """The reference (filter_reference.py) of the in-process twin: leaves' filter-then-rank, combined."""
    allowed = set(matching_documents(raw))
    for name, twin in composite_trees["in-process"].items():
        expected = reference(twin, query, allowed)
        for engine in ENGINES:
            found, _ = composite_trees[engine][name].retrieve(query, filters=raw)
            assert_same_answer(found, expected, f"{name} on {engine}")


def test_a_cascade_over_engine_leaves_answers_nothing_when_the_filter_matches_nothing(composite_trees):
    """No document has lang "fr": the first stage returns nothing, and the engine's later stage is asked to re-score
    nothing (Qdrant's vectors_for of no chunk once failed to reshape)."""
    for engine in ENGINES:
        found, _ = composite_trees[engine]["sequential"].retrieve("asylum appeal hearing", filters={"lang": "fr"})
        assert found == [], engine


def test_edge_indexes_each_filtered_field_by_the_kind_it_holds(engine_trees):
    """Numbers and dates (seconds since 1970) a float index, strings and `present` a keyword index, booleans a
    bool index: Qdrant answers a Range from its index instead of reading each candidate's payload."""
    index = engine_trees["qdrant"].index
    assert index.store.payload_indexes(index.name) == {
        "source_id": "keyword", "filterable.present": "keyword", "filterable.fields.lang": "keyword",
        "filterable.fields.tags": "keyword", "filterable.fields.year": "float", "filterable.fields.score": "float",
        "filterable.dates.published": "float", "filterable.fields.open": "bool",
        **{f"filterable.fields.{name}": "keyword" for name in ("CAT1", "CAT2", "CAT3", "COUNTRY_OF_ORIGIN")}}
