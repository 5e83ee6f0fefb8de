"""Every preset in components/ is a valid retriever tree, and the CLI accepts it by name."""

import json

import pytest

import dashrag
from dashrag.cli.config_files import preset_names, resolve_config
from dashrag.errors import ConfigError
from tests.conftest import REPO
from tests.fixtures.models import in_local_hub_cache

PRESETS = preset_names()
# Presets that name a model folder `dashrag finetune pipeline` writes (never committed): checked apart.
FINETUNED = [name for name in PRESETS if '"./models/' in (REPO / "components" / f"{name}.json").read_text()]
RERANKER = "cross-encoder/ms-marco-MiniLM-L-6-v2"
# Presets whose cross-encoder is not on this machine (no package ships one): checked apart, at validation.
NEEDS_RERANKER = [] if in_local_hub_cache(RERANKER) else [
    name for name in PRESETS if f'"{RERANKER}"' in (REPO / "components" / f"{name}.json").read_text()]


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


@pytest.mark.parametrize("name", [name for name in PRESETS if name not in FINETUNED + NEEDS_RERANKER])
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


@pytest.mark.parametrize("name", NEEDS_RERANKER)
def test_a_preset_whose_cross_encoder_is_absent_fails_validation_saying_how_to_get_it(name):
    with pytest.raises(ConfigError, match=f"huggingface-cli download {RERANKER}"):
        dashrag.validate_and_transform(resolve_config(name), "retriever")


def test_the_fine_tuned_preset_is_shipped():
    assert "scifact_finetuned" in FINETUNED


@pytest.mark.parametrize("name", FINETUNED)
def test_a_fine_tuned_preset_without_its_model_fails_validation_naming_the_folder_and_the_command(
        name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a fresh clone: ./models/ does not exist
    with pytest.raises(ConfigError, match=r"embedding\.params: model '\./models/.*is not a directory.*"
                                                  r"dashrag finetune"):
        dashrag.validate_and_transform(resolve_config(str(REPO / "components" / f"{name}.json")), "retriever")


@pytest.mark.parametrize("name", FINETUNED)
def test_a_fine_tuned_preset_is_a_valid_tree_once_its_model_folder_exists(name, tmp_path, monkeypatch):
    raw = resolve_config(str(REPO / "components" / f"{name}.json"))
    folder = raw["params"]["children"][1]["params"]["embedding"]["params"]["model"]
    (tmp_path / folder).mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    tree = dashrag.validate_and_transform(raw, "retriever")
    assert dashrag.build_component(tree).to_config() == tree
