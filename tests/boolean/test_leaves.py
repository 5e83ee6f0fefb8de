"""The component's leaf evaluator helpers: score modes, the dense node, restrictions, reranker adapters."""

from __future__ import annotations

import numpy as np
import pytest

import dashrag
from dashrag.boolean.category_index import CategoryIndex
from dashrag.boolean.leaves import (
    DocumentMaskRestriction,
    find_dense_node,
    max_normalised,
    reranker_function,
    resolve_score_mode,
)
from dashrag.core.factory import build_component
from dashrag.errors import ConfigError
from tests.conftest import EXAMPLE_CORPUS


def test_max_normalised_divides_by_the_best():
    assert max_normalised(np.array([2.0, 1.0, 0.5])).tolist() == [1.0, 0.5, 0.25]


def test_max_normalised_of_no_positive_score_is_zero():
    assert max_normalised(np.array([0.0, -1.0])).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("mode, has_dense, resolved", [
    ("auto", True, "dense_cosine"), ("auto", False, "max_normalised"), ("child", False, "child"),
    ("max_normalised", True, "max_normalised"), ("dense_cosine", True, "dense_cosine")])
def test_resolve_score_mode(mode, has_dense, resolved):
    assert resolve_score_mode(mode, has_dense) == resolved


def test_dense_cosine_without_a_dense_node_is_a_config_error():
    with pytest.raises(ConfigError, match="needs a DenseEmbeddingRetriever"):
        resolve_score_mode("dense_cosine", False)


def test_the_dense_node_is_found_inside_a_hybrid():
    hybrid = build_component({"component": "ParallelRetriever", "params": {
        "children": [{"component": "BM25Retriever"}, {"component": "DenseEmbeddingRetriever"}]}})
    assert find_dense_node(hybrid) is hybrid.get_children()[1]


def test_a_keyword_child_has_no_dense_node():
    assert find_dense_node(build_component({"component": "BM25Retriever"})) is None


@pytest.fixture(scope="module")
def bm25(tmp_path_factory):
    return dashrag.build({"component": "BM25Retriever", "params": {"top_k": 5}}, EXAMPLE_CORPUS,
                         tmp_path_factory.mktemp("leaves"))


def test_a_document_mask_restriction_keeps_the_rows_of_its_documents(bm25):
    chunks = bm25.require_infra().chunks
    allowed = CategoryIndex(
        chunks.document_ids, [{"K": ("x",)} if i % 2 else {} for i in range(len(chunks.document_ids))]
    )
    documents = allowed.documents("K", ["x"])
    rows = DocumentMaskRestriction(documents, chunks, documents.mask).row_mask(chunks)
    assert {c.document_id for c, ok in zip(chunks.chunks, rows) if ok} == set(documents)


def test_a_retriever_without_text_scoring_reranks_through_score_chunks(bm25):
    rerank = reranker_function(bm25)
    hits, _ = bm25.retrieve("rank fusion")
    distances = dict(bm25.score_chunks([h.id for h in hits], "rank fusion"))
    assert rerank("rank fusion", [h.chunk.text for h in hits], hits) == [-distances[h.id] for h in hits]
