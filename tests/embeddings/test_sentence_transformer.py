"""Sentence-transformers embeddings: offline default, library parity, cache keys, overflow, normalisation."""

from __future__ import annotations

import numpy as np
import pytest

from dashrag.embeddings.base import ModelUnavailableError
from dashrag.embeddings.overflow import window_spans
from dashrag.embeddings.sentence_transformer import MiniLMEmbedding, SentenceTransformerEmbedding
from dashrag.errors import ConfigError, QueryError
from tests.fixtures.models import minilm_dir

TEXTS = ["Vitamin D deficiency raises the risk of fractures.",
         "Stem cells can be tracked with magnetic nanoparticles.",
         "A short one."]
LONG = " ".join(f"Sentence {i} is about protein folding in yeast cells." for i in range(40))

pytestmark = pytest.mark.slow  # loads a real model


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedding:
    return MiniLMEmbedding({})


def test_minilm_embeds_offline_into_unit_float32_rows(minilm):
    vectors = minilm.embed_documents(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384) == (3, minilm.dimension)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


def test_vectors_equal_the_library_on_the_same_folder(minilm):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(minilm_dir()), device="cpu").encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(minilm.embed_documents(TEXTS), reference, atol=1e-6)


def test_two_lengths_share_one_loaded_model_and_each_call_reads_its_own(minilm):
    """One load of the weights serves every ``max_seq_length`` (``embeddings/shared_model``), and a call truncates
    at its own length whichever length the call before it read: the vectors of a model loaded at that length."""
    from sentence_transformers import SentenceTransformer

    short = MiniLMEmbedding({"max_seq_length": 32})
    assert short.model() is minilm.model()
    loaded_at_32 = SentenceTransformer(str(minilm_dir()), device="cpu")
    loaded_at_32.max_seq_length = 32
    texts = [LONG, TEXTS[0]]  # LONG is past both lengths, TEXTS[0] within both
    at_32 = loaded_at_32.encode(texts, normalize_embeddings=True)
    at_own = SentenceTransformer(str(minilm_dir()), device="cpu").encode(texts, normalize_embeddings=True)
    assert not np.allclose(at_32[0], at_own[0], atol=1e-3)
    for _ in range(2):  # alternated: neither length is left behind on the shared model for the next call
        np.testing.assert_allclose(short.embed_documents(texts), at_32, atol=1e-6)
        np.testing.assert_allclose(minilm.embed_documents(texts), at_own, atol=1e-6)


def test_the_generic_component_defaults_to_the_same_model_and_cache_key(minilm):
    generic = SentenceTransformerEmbedding({})
    assert generic.cache_key() == minilm.cache_key()
    np.testing.assert_array_equal(generic.embed_queries(TEXTS), minilm.embed_queries(TEXTS))


def test_cache_key_is_stable_across_instances():
    assert MiniLMEmbedding({}).cache_key() == MiniLMEmbedding({}).cache_key()


@pytest.mark.parametrize(
    "change", [{"normalize": False}, {"max_seq_length": 64}, {"overflow_strategy": "window_average"}]
)
def test_cache_key_changes_with_params_that_change_vectors(change):
    assert MiniLMEmbedding(change).cache_key() != MiniLMEmbedding({}).cache_key()


@pytest.mark.parametrize("change", [{"batch_size": 3}, {"device": "cuda:0"}])
def test_cache_key_ignores_params_that_do_not_change_vectors(change):
    assert MiniLMEmbedding(change).cache_key() == MiniLMEmbedding({}).cache_key()


def test_window_average_equals_truncate_for_a_text_that_fits(minilm):
    windowed = MiniLMEmbedding({"overflow_strategy": "window_average"})
    np.testing.assert_allclose(windowed.embed_documents(TEXTS[:1]), minilm.embed_documents(TEXTS[:1]), atol=1e-6)


def test_window_average_is_the_normalised_mean_of_the_window_vectors():
    size = 32
    windowed = MiniLMEmbedding({"overflow_strategy": "window_average", "max_seq_length": size})
    with windowed.model().reading(size) as model:
        offsets = model.tokenizer(LONG, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        spans = window_spans(offsets, size - 2)  # [CLS] and [SEP] take two of the 32 positions
        assert len(spans) > 3
        windows = model.encode([LONG[a:b] for a, b in spans], normalize_embeddings=True)
    mean = windows.mean(axis=0)
    np.testing.assert_allclose(windowed.embed_documents([LONG])[0], mean / np.linalg.norm(mean), atol=1e-5)


def test_window_average_differs_from_truncating_a_long_text():
    truncated = MiniLMEmbedding({"max_seq_length": 32}).embed_documents([LONG])[0]
    windowed = MiniLMEmbedding({"max_seq_length": 32, "overflow_strategy": "window_average"}).embed_documents([LONG])[0]
    assert float(truncated @ windowed) < 0.99


def test_normalize_false_keeps_a_models_raw_lengths(unnormalised_minilm_dir):
    raw = SentenceTransformerEmbedding({"model": str(unnormalised_minilm_dir), "normalize": False})
    assert np.all(np.abs(np.linalg.norm(raw.embed_documents(TEXTS), axis=1) - 1) > 0.1)


def test_normalize_true_makes_any_model_unit_length(unnormalised_minilm_dir):
    unit = SentenceTransformerEmbedding({"model": str(unnormalised_minilm_dir), "normalize": True})
    np.testing.assert_allclose(np.linalg.norm(unit.embed_documents(TEXTS), axis=1), 1, atol=1e-5)


def test_a_bad_model_path_is_a_clear_config_error_at_validation(tmp_path):
    with pytest.raises(ConfigError, match="params: model .*missing-model.*is not a directory.*dashrag finetune"):
        SentenceTransformerEmbedding({"model": str(tmp_path / "missing-model")})


def test_a_folder_that_is_not_a_model_fails_to_load_clearly(tmp_path):
    with pytest.raises(ModelUnavailableError, match="could not load a sentence-transformers model"):
        SentenceTransformerEmbedding({"model": str(tmp_path)}).embed_documents(TEXTS)


def test_no_texts_give_an_empty_matrix_of_the_right_width(minilm):
    assert minilm.embed_documents([]).shape == (0, 384)


def test_a_single_string_is_refused(minilm):
    with pytest.raises(QueryError, match="single string"):
        minilm.embed_queries("not a list")


def test_counters_record_what_was_embedded():
    fresh = MiniLMEmbedding({})
    fresh.embed_documents(TEXTS)
    fresh.embed_queries(TEXTS[:1])
    assert (fresh.documents_embedded, fresh.queries_embedded) == (3, 1)
