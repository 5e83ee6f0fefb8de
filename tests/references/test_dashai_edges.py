"""DashAI's own verdicts on edge values, as its tests and models' code state them (tests/back/RAG/ and
DashAI/back/models/RAG/retrievers/ of DashAISoftware/DashAI): those dashrag matches, and those it answers
differently on purpose, pinned so the decision recorded in docs/reference_differences.md cannot drift."""

from __future__ import annotations

import pytest

import dashrag
from dashrag.core.factory import build_component
from dashrag.core.validation import validate_and_transform
from dashrag.documents.model import Chunk
from dashrag.errors import ConfigError
from tests.conftest import EXAMPLE_CORPUS


def bm25(k1: float, tmp_path):
    texts = ["apple apple apple banana", "apple banana cherry date", *(f"cherry date fig grape {i}" for i in range(6))]
    tree = build_component({"component": "BM25Retriever", "params": {"k1": k1, "top_k": 3}}, "retriever")
    tree.inject_infra(tmp_path, [Chunk(i, f"d{i}", 0, t, 0, len(t)) for i, t in enumerate(texts)], None)
    tree.init_model()
    return tree


def test_k1_zero_is_accepted_and_counts_a_term_once_however_often(tmp_path):
    """DashAI's schema: ``k1`` >= 0. With k1 = 0 every variant's tf part is 1: only whether a term occurs counts."""
    flat = {c.id: c.score for c in bm25(0, tmp_path / "flat").retrieve("apple")[0]}
    saturating = {c.id: c.score for c in bm25(1.5, tmp_path / "sat").retrieve("apple")[0]}
    assert set(flat) == {0, 1} and flat[0] == pytest.approx(flat[1])
    assert saturating[0] > saturating[1]  # the same chunks with k1 > 0: repetition counts


@pytest.mark.parametrize("field", ["max_df", "min_df"])
def test_a_document_frequency_above_one_that_is_no_whole_count_is_refused(field):
    config = {"component": "BM25Retriever", "params": {
        "BM25Vectorizer": {"component": "BM25VectorizerModel", "params": {field: 1.5}}}}
    with pytest.raises(ConfigError, match=f"BM25Vectorizer.params.{field}: 1.5 is neither a fraction"):
        validate_and_transform(config)


def test_a_whole_count_above_one_stays_a_count_of_documents():
    """DashAI refuses max_df above 1.0; dashrag keeps scikit-learn's reading of a whole number as a count."""
    config = {"component": "BM25Retriever", "params": {
        "BM25Vectorizer": {"component": "BM25VectorizerModel", "params": {"max_df": 2}}}}
    assert validate_and_transform(config)["params"]["vectorizer"]["params"]["max_df"] == 2


def test_empty_vectorizer_params_mean_every_default():
    """DashAI's session validation refuses ``params: {}`` for a nested vectorizer; dashrag's defaults are real
    defaults, so {} is the default vectorizer, as a missing vectorizer is."""
    empty = validate_and_transform({"component": "BM25Retriever", "params": {
        "BM25Vectorizer": {"component": "BM25VectorizerModel", "params": {}}}})
    absent = validate_and_transform({"component": "BM25Retriever", "params": {}})
    assert empty == absent


def test_the_cross_encoder_rescores_candidates_that_already_fit_top_k(cross_encoder_dir, tmp_path):
    """DashAI returns them in the child's order unscored; dashrag's answer carries the model's scores, ordered."""
    from sentence_transformers import CrossEncoder

    tree = dashrag.build({"component": "CrossEncoderRetriever", "params": {
        "model": str(cross_encoder_dir), "top_k": 5, "max_length": 128,
        "children": [{"component": "BM25Retriever", "params": {"top_k": 3}}]}}, EXAMPLE_CORPUS, tmp_path / "ce")
    query = "how does BM25 weigh term frequency"
    child, _ = tree.child.retrieve(query)
    chunks, _ = tree.retrieve(query)
    model = CrossEncoder(str(cross_encoder_dir), device="cpu", max_length=128)
    expected = model.predict([(query, c.chunk.text) for c in child])
    assert sorted(c.id for c in chunks) == sorted(c.id for c in child) and len(chunks) == 3
    assert [c.score for c in chunks] == pytest.approx(sorted(map(float, expected), reverse=True), abs=1e-5)
