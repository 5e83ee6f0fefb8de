"""The loopback server itself: routes, recording, and what it does when the script runs out."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from .openai_server import http_error, select


def post(server, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
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
