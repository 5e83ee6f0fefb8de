"""Settings: RAG_* environment variables, overridden by a settings file, overridden by flags."""

from __future__ import annotations

import json

import pytest

from dashrag.errors import ConfigError
from dashrag.service.settings import load_settings


def test_defaults_are_the_reference_figures(monkeypatch):
    for name in ("RAG_PORT", "RAG_RETRIEVAL_SCORE_FLOOR", "RAG_CONFIDENCE_THRESHOLD"):
        monkeypatch.delenv(name, raising=False)
    s = load_settings()
    assert (s.port, s.retrieval_score_floor, s.confidence_threshold) == (8051, 0.3, 0.5)
    assert s.budgets() == {"simple": 512, "medium": 1024, "complex": 2048} and s.cors_origins == ["*"]
    assert s.reranker_url is None and s.llm_model is None and s.auth_token_var is None


def test_the_reference_environment_variables_are_read(monkeypatch):
    monkeypatch.setenv("RAG_PORT", "9000")
    monkeypatch.setenv("RAG_RETRIEVAL_SCORE_FLOOR", "0.2")
    monkeypatch.setenv("RAG_CONFIDENCE_THRESHOLD", "0.7")
    monkeypatch.setenv("RAG_BUDGET_MEDIUM", "999")
    monkeypatch.setenv("RAG_RERANKER_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("RAG_LLM_MODEL", "openai/x")
    monkeypatch.setenv("RAG_CORS_ORIGINS", '["http://a"]')
    s = load_settings()
    assert (s.port, s.retrieval_score_floor, s.confidence_threshold, s.budget_medium) == (9000, 0.2, 0.7, 999)
    assert (s.reranker_url, s.llm_model, s.cors_origins) == ("http://127.0.0.1:1", "openai/x", ["http://a"])


def test_a_settings_file_overrides_the_environment_and_flags_override_the_file(monkeypatch, tmp_path):
    monkeypatch.setenv("RAG_PORT", "9000")
    monkeypatch.setenv("RAG_BUDGET_SIMPLE", "100")
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"port": 9100, "host": "127.0.0.2"}))
    s = load_settings(path, host="127.0.0.3")
    assert (s.port, s.host, s.budget_simple) == (9100, "127.0.0.3", 100)
    toml = tmp_path / "settings.toml"
    toml.write_text('port = 9200\n')
    assert load_settings(toml).port == 9200


@pytest.mark.parametrize("text, problem", [("{", "not valid JSON"), ('{"prot": 1}', "prot"),
                                           ('{"port": -1}', "port"), ('{"auth_token_var": "a b"}', "auth_token_var")])
def test_a_bad_settings_file_is_an_error_naming_the_file_and_field(tmp_path, text, problem):
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(path) in str(caught.value) and problem in str(caught.value)
