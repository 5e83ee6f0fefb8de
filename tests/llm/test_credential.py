"""EnvCredential holds an environment variable's name; the secret is read only when asked for."""

from __future__ import annotations

import json

import pytest

from dashrag.core.factory import build_component
from dashrag.core.schema import component_schema
from dashrag.errors import ConfigError, CredentialError
from dashrag.llm.credential import EnvCredential

VAR = "DASHRAG_TEST_CREDENTIAL"
SECRET = "sk-credential-test-5d1e8a"


def test_resolve_reads_the_named_variable(monkeypatch):
    monkeypatch.setenv(VAR, SECRET)
    assert EnvCredential({"var": VAR}).resolve() == SECRET


def test_resolve_reads_the_variable_at_call_time(monkeypatch):
    credential = EnvCredential({"var": VAR})
    monkeypatch.setenv(VAR, "first")
    first = credential.resolve()
    monkeypatch.setenv(VAR, "rotated")
    assert (first, credential.resolve()) == ("first", "rotated")


def test_unset_variable_raises_credential_error_naming_it(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    with pytest.raises(CredentialError, match=f"environment variable {VAR} is not set"):
        EnvCredential({"var": VAR}).resolve()


def test_empty_variable_raises_credential_error_naming_it(monkeypatch):
    monkeypatch.setenv(VAR, "")
    with pytest.raises(CredentialError, match=f"environment variable {VAR} is empty"):
        EnvCredential({"var": VAR}).resolve()


def test_resolve_or_none_tolerates_an_unset_variable(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    credential = EnvCredential({"var": VAR})
    assert (credential.resolve_or_none(), credential.is_set()) == (None, False)


def test_config_summary_and_repr_hold_the_name_never_the_value(monkeypatch):
    monkeypatch.setenv(VAR, SECRET)
    credential = EnvCredential({"var": VAR})
    credential.resolve()
    shown = json.dumps([credential.to_config(), credential.get_schema_summary(), credential.render_representation(),
                        component_schema(EnvCredential)]) + repr(credential) + repr(vars(credential))
    assert credential.to_config() == {"component": "EnvCredential", "params": {"var": VAR}}
    assert SECRET not in shown


def test_default_variable_is_openai_api_key():
    assert EnvCredential().var == "OPENAI_API_KEY"


@pytest.mark.parametrize("bad", ["", "1ABC", "MY-KEY", "sk live", "A=B"])
def test_a_name_that_is_no_environment_variable_is_a_validation_error_with_its_path(bad):
    with pytest.raises(ConfigError) as caught:
        build_component({"component": "EnvCredential", "params": {"var": bad}}, "credential")
    assert [issue.path for issue in caught.value.issues] == ["params.var"]


@pytest.mark.parametrize("padded", [SECRET + "\n", SECRET + "\r\n", "\t" + SECRET + " ", " " + SECRET + "\r"])
def test_surrounding_whitespace_is_stripped(monkeypatch, padded):
    monkeypatch.setenv(VAR, padded)
    credential = EnvCredential({"var": VAR})
    assert (credential.resolve(), credential.resolve_or_none()) == (SECRET, SECRET)


@pytest.mark.parametrize("broken", [SECRET[:6] + "\n" + SECRET[6:], SECRET + "\x1b[0m!",
                                    SECRET[:4] + "\x07" + SECRET[4:]])
def test_a_control_character_inside_is_refused_without_showing_the_value(monkeypatch, broken):
    monkeypatch.setenv(VAR, broken)
    with pytest.raises(CredentialError, match=f"{VAR} holds a control character") as caught:
        EnvCredential({"var": VAR}).resolve()
    assert SECRET[:6] not in str(caught.value) and SECRET[-6:] not in str(caught.value)


def test_a_blank_variable_is_empty(monkeypatch):
    monkeypatch.setenv(VAR, " \r\n")
    with pytest.raises(CredentialError, match="is empty"):
        EnvCredential({"var": VAR}).resolve()
