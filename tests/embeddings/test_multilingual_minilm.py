"""The reference default model: used where its files are, a clear error saying how to provide them elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from dashrag.embeddings.multilingual_minilm import MULTILINGUAL_MINILM, MultilingualMiniLMEmbedding
from dashrag.embeddings.sentence_transformer import MiniLMEmbedding
from dashrag.errors import ConfigError
from tests.fixtures.models import in_local_hub_cache, minilm_dir

pytestmark = pytest.mark.slow  # loads a real model


def test_without_its_weights_the_error_says_how_to_provide_them():
    if in_local_hub_cache(MULTILINGUAL_MINILM):
        pytest.skip("paraphrase-multilingual-MiniLM-L12-v2 is in this machine's Hugging Face cache")
    with pytest.raises(ConfigError) as info:  # at validation, before anything is built
        MultilingualMiniLMEmbedding({})
    message = str(info.value)
    assert f"huggingface-cli download {MULTILINGUAL_MINILM}" in message
    assert "params.local_dir" in message
    assert "E5SmallEmbedding" in message


def test_local_dir_is_where_the_model_is_read_from():
    # the packaged MiniLM folder stands in for a downloaded copy: same files → same vectors
    from_dir = MultilingualMiniLMEmbedding({"local_dir": str(minilm_dir())})
    texts = ["Hola mundo", "Hello world"]
    np.testing.assert_array_equal(from_dir.embed_documents(texts), MiniLMEmbedding({}).embed_documents(texts))


def test_a_local_dir_that_does_not_exist_is_named(tmp_path):
    with pytest.raises(ConfigError, match="params.local_dir.*is not a directory"):
        MultilingualMiniLMEmbedding({"local_dir": str(tmp_path / "absent")})
