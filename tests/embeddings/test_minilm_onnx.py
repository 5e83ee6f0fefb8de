"""MiniLM as int8 ONNX on onnxruntime: the same model as torch MiniLM, pooled and normalised alike."""

from __future__ import annotations

import numpy as np
import pytest

import dashrag
from dashrag.embeddings.minilm_onnx import MiniLMOnnxEmbedding, mean_pool
from tests.fixtures.scifact import FAST_MINILM, dense_config

TEXTS = ["vitamin D deficiency and fractures", "tumour suppressor p53 mutation in cancer cells",
         "Cerebral white matter diffusion in preterm newborns measured by MRI", "short"]
ONNX = {"component": "MiniLMOnnxEmbedding", "params": {"max_seq_length": 128}}


@pytest.fixture(scope="module")
def onnx() -> MiniLMOnnxEmbedding:
    return MiniLMOnnxEmbedding({})


def test_mean_pool_averages_only_the_unpadded_tokens():
    tokens = np.array([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    np.testing.assert_array_equal(mean_pool(tokens, np.array([[1, 1, 0]])), [[2.0, 3.0]])


def test_vectors_are_unit_float32_rows_of_384_dimensions(onnx):
    vectors = onnx.embed_documents(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (4, onnx.dimension) == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


def test_vectors_point_where_torch_minilm_points(onnx):
    """int8 weights move the vectors a little, never the meaning: cosine to the torch model's >= 0.998."""
    torch_vectors = dashrag.build_component({"component": "MiniLMEmbedding"}).embed_documents(TEXTS)
    cosines = (onnx.embed_documents(TEXTS) * torch_vectors).sum(axis=1)
    assert cosines.min() >= 0.998


def test_a_batch_embeds_each_text_as_it_would_alone(onnx):
    alone = np.vstack([onnx.embed_queries([text]) for text in TEXTS])
    np.testing.assert_allclose(onnx.embed_documents(TEXTS), alone, atol=1e-6)


def test_batch_size_and_threads_do_not_change_vectors(onnx):
    other = MiniLMOnnxEmbedding({"batch_size": 1, "threads": 1})
    np.testing.assert_allclose(other.embed_documents(TEXTS * 3), onnx.embed_documents(TEXTS * 3), atol=1e-6)


def test_text_beyond_max_seq_length_is_truncated():
    short = MiniLMOnnxEmbedding({"max_seq_length": 8})
    base = "vitamin D deficiency and fractures in"
    np.testing.assert_array_equal(short.embed_queries([base + " elderly women"]),
                                  short.embed_queries([base + " young children"]))


def test_cache_key_follows_what_changes_vectors(onnx):
    assert MiniLMOnnxEmbedding({"batch_size": 2, "threads": 1}).cache_key() == onnx.cache_key()
    assert MiniLMOnnxEmbedding({"max_seq_length": 128}).cache_key() != onnx.cache_key()
    assert dashrag.build_component({"component": "MiniLMEmbedding"}).cache_key() != onnx.cache_key()


@pytest.mark.slow
def test_dense_search_with_it_finds_what_torch_minilm_finds(subset, shared_workdir, run_cache):
    """On the SciFact subset, the relevant abstracts the two models rank in their top 10 mostly agree."""
    tree_onnx = dashrag.build(dense_config(embedding=ONNX), subset.corpus, shared_workdir, cache_dir=run_cache)
    tree_torch = dashrag.build(dense_config(embedding=FAST_MINILM), subset.corpus, shared_workdir, cache_dir=run_cache)
    overlaps = []
    for query in subset.queries.values():
        found_onnx = {c.document_id for c in tree_onnx.retrieve(query)[0]}
        found_torch = {c.document_id for c in tree_torch.retrieve(query)[0]}
        overlaps.append(len(found_onnx & found_torch) / 10)
    assert np.mean(overlaps) >= 0.8
