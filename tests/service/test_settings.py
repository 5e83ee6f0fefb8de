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


def test_the_references_timeouts_end_in_sec_and_llm_timeout_sec_defaults_to_30(monkeypatch):
    for name in ("RAG_LLM_TIMEOUT_SEC", "RAG_LLM_TIMEOUT", "RAG_EMBEDDING_TIMEOUT_SEC"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_RERANKER_TIMEOUT_SEC", "4")
    monkeypatch.setenv("RAG_BUILD_TIMEOUT_SEC", "60")
    s = load_settings()
    assert (s.llm_timeout_sec, s.reranker_timeout_sec, s.build_timeout_sec, s.embedding_timeout_sec) == (30, 4, 60, 10)


@pytest.mark.parametrize("old, new, value", [
    ("llm_timeout", "llm_timeout_sec", 2.5), ("reranker_timeout", "reranker_timeout_sec", 3.0),
    ("build_timeout_s", "build_timeout_sec", 90.0)])
def test_todays_setting_names_stay_aliases_of_the_references(monkeypatch, tmp_path, old, new, value):
    monkeypatch.delenv(f"RAG_{new.upper()}", raising=False)
    monkeypatch.setenv(f"RAG_{old.upper()}", str(value))  # the former variable
    assert getattr(load_settings(), new) == value
    file = tmp_path / "settings.json"
    file.write_text(json.dumps({old: value + 1}))  # a settings file written for an older dashrag
    assert getattr(load_settings(file), new) == value + 1
    assert getattr(load_settings(None, **{old: value + 2}), new) == value + 2
    monkeypatch.setenv(f"RAG_{new.upper()}", str(value + 3))  # the reference's variable wins over the former one
    assert getattr(load_settings(), new) == value + 3


def test_a_setting_given_under_both_names_is_an_error_naming_both(tmp_path):
    file = tmp_path / "settings.json"
    file.write_text(json.dumps({"llm_timeout": 1, "llm_timeout_sec": 2}))
    with pytest.raises(ConfigError, match=r"settings\.json: 'llm_timeout' and 'llm_timeout_sec' are one setting"):
        load_settings(file)


def test_the_references_unprefixed_variables_are_read_and_rag_names_win(monkeypatch):
    for name in ("RAG_LLM_ENDPOINT", "RAG_QDRANT", "RAG_LOG_LEVEL", "RAG_LOG_FORMAT", "RAG_QDRANT_API_KEY_VAR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LLM_ENDPOINT", "http://127.0.0.1:9/generate")
    monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:6333")
    monkeypatch.setenv("LOG_LEVEL", "warning")
    monkeypatch.setenv("LOG_FORMAT", "TEXT")
    s = load_settings()
    assert (s.llm_endpoint, s.qdrant, s.log_level, s.log_format) == (
        "http://127.0.0.1:9/generate", "http://127.0.0.1:6333", "WARNING", "text")
    assert (s.llm_api_token_var, s.qdrant_api_key_var) == ("RAG_LLM_API_TOKEN", "QDRANT_API_KEY")
    monkeypatch.setenv("RAG_LLM_ENDPOINT", "http://127.0.0.1:10/generate")
    assert load_settings().llm_endpoint == "http://127.0.0.1:10/generate"


def test_an_unknown_log_format_is_an_error_naming_the_setting(monkeypatch):
    monkeypatch.setenv("LOG_FORMAT", "xml")
    with pytest.raises(ConfigError, match="log_format"):
        load_settings()


def test_the_references_shared_fallbacks_are_read_when_the_rag_names_are_unset(monkeypatch):
    for name in ("RAG_LLM_TIMEOUT_SEC", "RAG_LLM_TIMEOUT", "RAG_EMBED_URL", "RAG_EMBEDDING_TIMEOUT_SEC"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LLM_TIMEOUT_SEC", "7")
    monkeypatch.setenv("EMBED_URL", "http://127.0.0.1:8016")
    monkeypatch.setenv("EMBEDDING_TIMEOUT_SEC", "4")
    s = load_settings()
    assert (s.llm_timeout_sec, s.embed_url, s.embedding_timeout_sec) == (7.0, "http://127.0.0.1:8016", 4.0)
    assert s.llm_token_vars() == ("RAG_LLM_API_TOKEN", "LLM_API_TOKEN")
    monkeypatch.setenv("RAG_LLM_TIMEOUT_SEC", "9")
    monkeypatch.setenv("RAG_LLM_TIMEOUT", "8")  # the former RAG_ name beats the shared fallback, not the RAG_ name
    assert load_settings().llm_timeout_sec == 9.0
    monkeypatch.delenv("RAG_LLM_TIMEOUT_SEC")
    assert load_settings().llm_timeout_sec == 8.0
