"""LiteLLMModel through the real path: litellm -> openai SDK -> HTTP -> the scripted loopback server."""

from __future__ import annotations

import pytest

from dashrag.errors import ConfigError, CredentialError, LLMBackendError, LLMError
from dashrag.llm.litellm_model import NO_KEY, LiteLLMModel
from dashrag.llm.selection import SELECT_FUNCTION_NAME, selection_tool_schema
from dashrag.llm.tool_call import load_litellm

from .openai_server import plain_text, raw_arguments, select, slow

VAR = "DASHRAG_TEST_LLM_KEY"
MESSAGES = [{"role": "user", "content": 'Query: fever\n[1] "Aspirin."\n[2] "Moon."'}]
TOOL = selection_tool_schema(2, 1)


def model_for(server, **params) -> LiteLLMModel:
    return LiteLLMModel({"model": "openai/test-model", "api_base": server.api_base,
                         "credential": {"component": "EnvCredential", "params": {"var": VAR}}, **params})


def authorization(server, index: int = -1) -> str | None:
    headers = {k.lower(): v for k, v in server.requests[index].headers.items()}
    return headers.get("authorization")


def test_call_sends_the_configured_request_with_the_tool_forced(openai_server, monkeypatch):
    monkeypatch.setenv(VAR, "sk-model-test")
    openai_server.script(select(2))
    result = model_for(openai_server, temperature=0.3, max_tokens=40).call_tool(MESSAGES, TOOL)
    body = openai_server.requests[0].body
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("test-model", 0.3, 40)
    assert body["tool_choice"] == {"type": "function", "function": {"name": SELECT_FUNCTION_NAME}}
    assert [t["function"]["name"] for t in body["tools"]] == [SELECT_FUNCTION_NAME]
    assert result.tool_calls[0]["function"] == {"name": SELECT_FUNCTION_NAME, "arguments": '{"indices": [2]}'}


def test_the_key_is_read_from_the_named_variable_at_each_call(openai_server, monkeypatch):
    model = model_for(openai_server)
    openai_server.script(select(1), select(1))
    monkeypatch.setenv(VAR, "sk-first")
    model.call_tool(MESSAGES, TOOL)
    monkeypatch.setenv(VAR, "sk-rotated")
    model.call_tool(MESSAGES, TOOL)
    assert [authorization(openai_server, i) for i in (0, 1)] == ["Bearer sk-first", "Bearer sk-rotated"]


def test_usage_is_what_the_server_reported_and_cost_is_none_for_an_unpriced_model(openai_server, monkeypatch):
    monkeypatch.setenv(VAR, "sk-model-test")
    openai_server.script(select(1))
    result = model_for(openai_server).call_tool(MESSAGES, TOOL)
    assert result.usage == openai_server.requests[0].response["usage"]
    assert result.cost is None and result.latency_ms > 0


def test_cost_is_litellms_price_times_the_reported_tokens(openai_server, monkeypatch):
    monkeypatch.setenv(VAR, "sk-model-test")
    openai_server.script(select(1))
    result = model_for(openai_server, model="openai/gpt-4o-mini").call_tool(MESSAGES, TOOL)
    price = load_litellm().model_cost["gpt-4o-mini"]
    usage = openai_server.requests[0].response["usage"]
    expected = (usage["prompt_tokens"] * price["input_cost_per_token"]
                + usage["completion_tokens"] * price["output_cost_per_token"])
    assert result.cost == pytest.approx(expected, rel=1e-9) and expected > 0


def test_hosted_model_with_unset_variable_raises_credential_error_naming_it(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    model = LiteLLMModel({"model": "gpt-4o-mini", "credential": {"component": "EnvCredential", "params": {"var": VAR}}})
    with pytest.raises(CredentialError, match=VAR):
        model.call_tool(MESSAGES, TOOL)


def test_local_server_with_unset_variable_gets_the_placeholder_not_openai_api_key(openai_server, monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-travel")
    openai_server.script(select(1))
    model_for(openai_server).call_tool(MESSAGES, TOOL)
    assert authorization(openai_server) == f"Bearer {NO_KEY}"


def test_model_litellm_lists_without_function_calling_is_refused_before_any_request(openai_server, monkeypatch):
    monkeypatch.setenv(VAR, "sk-model-test")
    openai_server.script(select(1))
    with pytest.raises(ConfigError, match="does not support function calling"):
        model_for(openai_server, model="gpt-3.5-turbo-instruct").call_tool(MESSAGES, TOOL)
    assert openai_server.requests == []


def test_timeout_is_honoured_in_one_request(openai_server, monkeypatch):
    litellm = load_litellm()
    monkeypatch.setenv(VAR, "sk-model-test")
    openai_server.script(slow(3.0))
    with pytest.raises(LLMBackendError, match=r"no answer within 0\.5 s") as caught:
        model_for(openai_server, timeout=0.5).call_tool(MESSAGES, TOOL)
    assert caught.value.kind == "timeout" and isinstance(caught.value.__cause__, litellm.Timeout)
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize("api_base, expected", [(None, "tool_message"), ("http://127.0.0.1:9/v1", "user_message")])
def test_auto_retry_feedback_is_a_user_message_for_a_server_you_run(api_base, expected):
    assert LiteLLMModel({"api_base": api_base}).feedback_mode == expected


@pytest.mark.parametrize("mode", ["tool_message", "user_message"])
def test_an_explicit_retry_feedback_is_kept_whatever_the_api_base(mode):
    assert {LiteLLMModel({"retry_feedback": mode, "api_base": base}).feedback_mode
            for base in (None, "http://127.0.0.1:9/v1")} == {mode}


def test_an_unknown_retry_feedback_is_a_validation_error():
    with pytest.raises(ConfigError, match="retry_feedback"):
        LiteLLMModel({"retry_feedback": "system_message"})


def test_a_closed_model_refuses_calls(openai_server, monkeypatch):
    monkeypatch.setenv(VAR, "sk-model-test")
    model = model_for(openai_server)
    model.close()
    with pytest.raises(LLMError, match="closed"):
        model.call_tool(MESSAGES, TOOL)
    assert model.closed and openai_server.requests == []


def test_an_answer_echoing_the_key_comes_back_masked(openai_server, monkeypatch):
    monkeypatch.setenv(VAR, "sk-echoed-3b7e1f")
    openai_server.script(plain_text("your key is sk-echoed-3b7e1f"), raw_arguments('{"indices": "sk-echoed-3b7e1f"}'))
    model = model_for(openai_server)
    text, call = model.call_tool(MESSAGES, TOOL), model.call_tool(MESSAGES, TOOL)
    assert text.content == "your key is [REDACTED]"
    assert call.tool_calls[0]["function"]["arguments"] == '{"indices": "[REDACTED]"}'


def test_default_credential_is_openai_api_key_by_reference():
    config = LiteLLMModel().to_config()
    assert config["params"]["credential"] == {"component": "EnvCredential", "params": {"var": "OPENAI_API_KEY"}}


def test_a_key_read_from_a_crlf_env_file_is_sent_stripped(openai_server, monkeypatch):
    # a CRLF .env line used to reach the HTTP library raw, which printed the whole key in "Illegal header value"
    monkeypatch.setenv(VAR, "sk-crlf-key-0042\r\n")
    openai_server.script(select(1))
    model_for(openai_server).call_tool(MESSAGES, TOOL)
    assert authorization(openai_server) == "Bearer sk-crlf-key-0042"


def test_a_key_with_a_control_character_inside_never_reaches_the_wire(openai_server, monkeypatch):
    monkeypatch.setenv(VAR, "sk-split\nkey-0042")
    with pytest.raises(CredentialError, match="control character") as caught:
        model_for(openai_server).call_tool(MESSAGES, TOOL)
    assert "sk-split" not in str(caught.value) and openai_server.requests == []
