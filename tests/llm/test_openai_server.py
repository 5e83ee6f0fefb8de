"""The loopback server itself: routes, recording, and what it does when the script runs out."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from .openai_server import ScriptedOpenAIServer, http_error, malformed_body, select


def post(server, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{server.url}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_replies_are_served_in_script_order_and_requests_recorded(openai_server):
    openai_server.script(select(2), select(1))
    answers = [post(openai_server, "/v1/chat/completions", {"model": "m", "messages": [], "n": i})[1] for i in (1, 2)]
    args = [a["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] for a in answers]
    assert args == ['{"indices": [2]}', '{"indices": [1]}']
    assert [r.body["n"] for r in openai_server.requests] == [1, 2]


def test_exhausted_script_answers_500_and_counts_it(openai_server):
    status, body = post(openai_server, "/v1/chat/completions", {"model": "m", "messages": []})
    assert (status, openai_server.unscripted) == (500, 1)
    assert "script exhausted" in body["error"]["message"]


def test_unknown_path_is_404_and_consumes_no_reply(openai_server):
    openai_server.script(select(1))
    status, _ = post(openai_server, "/v1/embeddings", {})
    assert (status, openai_server.remaining) == (404, 1)


@pytest.mark.parametrize("status", [429, 500])
def test_scripted_http_error_has_openai_error_shape(openai_server, status):
    openai_server.script(http_error(status, "nope"))
    code, body = post(openai_server, "/v1/chat/completions", {"model": "m", "messages": []})
    assert (code, body["error"]["message"]) == (status, "nope")


def test_strict_mode_refuses_a_message_without_content_like_a_strict_template():
    with ScriptedOpenAIServer([select(1)], strict=True) as server:
        status, body = post(server, "/v1/chat/completions", {"model": "m", "messages": [{"role": "assistant"}]})
    assert (status, body["error"]["message"], server.remaining) == (500, "'dict object' has no attribute 'content'", 1)


@pytest.mark.parametrize("tool_role, expected", [(False, 500), (True, 200)])
def test_strict_mode_refuses_the_tool_role_unless_enabled(tool_role, expected):
    messages = [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c", "content": "feedback"}]
    with ScriptedOpenAIServer([select(1)], strict=True, tool_role=tool_role) as server:
        status, _ = post(server, "/v1/chat/completions", {"model": "m", "messages": messages})
    assert status == expected


def test_lenient_mode_accepts_what_strict_mode_refuses(openai_server):
    openai_server.script(select(1))
    messages = [{"role": "assistant", "tool_calls": []}, {"role": "tool", "tool_call_id": "c", "content": "x"}]
    assert post(openai_server, "/v1/chat/completions", {"model": "m", "messages": messages})[0] == 200


def test_malformed_body_is_sent_as_is_with_status_200(openai_server):
    openai_server.script(malformed_body("<html>oops</html>"))
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(f"{openai_server.api_base}/chat/completions", b"{}", headers)
    with urllib.request.urlopen(request, timeout=5) as response:
        assert (response.status, response.read()) == (200, b"<html>oops</html>")
