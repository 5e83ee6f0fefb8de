"""Every preset in components/ is a valid retriever tree, and the CLI accepts it by name."""

import json

import pytest

import dashrag
from dashrag.cli.config_files import preset_names, resolve_config
from tests.conftest import REPO

PRESETS = preset_names()


def test_the_documented_presets_exist():
    assert {
        "keyword",
        "semantic",
        "hybrid",
        "hybrid_rrf",
        "hybrid_weighted",
        "hybrid_rerank",
        "agentic",
        "boolean",
    } <= set(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_preset_validates_as_a_retriever_tree(name):
    tree = dashrag.validate_and_transform(resolve_config(name), "retriever")
    assert dashrag.build_component(tree).to_config() == tree


@pytest.mark.parametrize("name", PRESETS)
def test_preset_file_is_pretty_json(name):
    text = (REPO / "components" / f"{name}.json").read_text()
    assert text.endswith("\n") and json.loads(text)


def test_hybrid_is_the_reference_default_shape():
    params = resolve_config("hybrid")["params"]
    assert params["merge_strategy"] == "round_robin"
    assert [c["component"] for c in params["children"]] == ["BM25Retriever", "DenseEmbeddingRetriever"]
    assert [c["params"]["top_k"] for c in params["children"]] == [5, 5]
