"""A real OpenAI-compatible chat-completions server on loopback, answering from a script.

Why a server and not a mock: the LLM code path (litellm -> the openai SDK -> httpx ->
HTTP -> JSON) is exactly where retries, timeouts, status codes and parsing go wrong,
so the tests drive that whole path and only the *model* is scripted.

Each POST /v1/chat/completions takes the next :class:`Reply` from the queue: a tool
call (right or wrong), a plain-text answer, an HTTP error, optionally after a delay.
Every request is recorded (path, headers, parsed JSON body) together with the
response body that was sent, so a test can check what the client asked for (the
forced ``tool_choice``, the retry message) and what the server answered (usage).

**Strict mode** (``strict=True``) answers like llama.cpp's server behind a chat template
that reads ``message.content`` under jinja's strict undefined and knows only the
system/user/assistant roles: a message without a ``content`` key is HTTP 500 (``'dict
object' has no attribute 'content'``, the server's own words), and so is a ``tool``
message unless ``tool_role=True``. Such a refused request still consumes no reply.

A reply can also be a 200 whose body is not a chat completion (:func:`malformed_body`).

Standard library only: served by :class:`tests.fixtures.http.LoopbackHTTPServer` (``127.0.0.1``,
port 0, a daemon thread).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Iterable

from tests.fixtures.http import LoopbackHTTPServer, send_json

SELECT_FUNCTION = "select_best_chunks"
CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: HTTP ``status``, then either tool calls or text, after ``delay_s``."""

    tool_calls: tuple[tuple[str, str], ...] = ()  # (function name, raw arguments string)
    text: str | None = None
    status: int = 200
    error_message: str = ""
    delay_s: float = 0.0
    raw_body: str | None = None  # sent as is with ``status`` instead of a completion (a malformed answer)


def select(*indices: Any, function: str = SELECT_FUNCTION) -> Reply:
    """A tool call whose arguments are ``{"indices": [...]}`` exactly as given (valid or not)."""
    return Reply(tool_calls=((function, json.dumps({"indices": list(indices)})),))


def raw_arguments(arguments: str, function: str = SELECT_FUNCTION) -> Reply:
    """A tool call with an arbitrary arguments string, e.g. malformed JSON."""
    return Reply(tool_calls=((function, arguments),))


def malformed_json() -> Reply:
    return raw_arguments('{"indices": [1, 2')


def wrong_function(name: str = "delete_all_documents") -> Reply:
    return raw_arguments(json.dumps({"indices": [1]}), function=name)


def plain_text(text: str = "The best candidates are 1 and 2.") -> Reply:
    return Reply(text=text)


def http_error(status: int, message: str = "scripted failure") -> Reply:
    return Reply(status=status, error_message=message)


def malformed_body(text: str = "<html>upstream proxy error</html>") -> Reply:
    """HTTP 200 whose body is not a chat completion at all (a proxy's page, a truncated answer)."""
    return Reply(raw_body=text)


def slow(delay_s: float, then: Reply | None = None) -> Reply:
    """``then`` (by default a valid selection of candidate 1), sent only after ``delay_s``."""
    base = then if then is not None else select(1)
    return Reply(base.tool_calls, base.text, base.status, base.error_message, delay_s, base.raw_body)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    response: dict[str, Any] = field(default_factory=dict)  # filled in when the answer is sent


class ScriptedOpenAIServer:
    """Start with ``with ScriptedOpenAIServer() as server:``; queue replies with ``server.script(...)``."""

    def __init__(self, replies: Iterable[Reply] = (), *, strict: bool = False, tool_role: bool = False) -> None:
        self._replies: deque[Reply] = deque(replies)
        self.strict = strict  # answer like a strict system/user/assistant chat template (module docstring)
        self.tool_role = tool_role  # in strict mode: whether the template knows ``tool`` messages
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self.unscripted = 0  # requests that found the queue empty (answered with HTTP 500)
        self._http = LoopbackHTTPServer()

    # -- lifecycle -------------------------------------------------------------
    def __enter__(self) -> ScriptedOpenAIServer:
        self._http.start(_handler_for(self))
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()  # wakes delayed replies so no handler outlives the server
        self._http.stop()

    # -- script ------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self._http.url

    @property
    def api_base(self) -> str:
        return f"{self.url}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def clear(self) -> None:
        """Drop the replies still queued (a phase that asked fewer questions than scripted is over)."""
        with self._lock:
            self._replies.clear()

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._replies)

    def template_error(self, body: dict[str, Any]) -> str | None:
        """What a strict chat template would fail on in this request (``None``: it renders)."""
        if not self.strict:
            return None
        for message in body.get("messages", []):
            if not isinstance(message, dict) or "content" not in message:
                return "'dict object' has no attribute 'content'"
            if message.get("role") == "tool" and not self.tool_role:
                return "the chat template knows only the system, user and assistant roles, not 'tool'"
        return None

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None


def _usage(body: dict[str, Any], completion: str) -> dict[str, int]:
    """Deterministic token counts (about four characters a token), so tests compare, never guess."""
    prompt_tokens = max(1, len(json.dumps(body.get("messages", []))) // 4)
    completion_tokens = max(1, len(completion) // 4)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _completion_body(reply: Reply, body: dict[str, Any], serial: int) -> dict[str, Any]:
    if reply.tool_calls:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{serial}_{i}", "type": "function", "function": {"name": name, "arguments": args}}
                for i, (name, args) in enumerate(reply.tool_calls)
            ],
        }
        finish, completion = "tool_calls", "".join(a for _, a in reply.tool_calls)
    else:
        message = {"role": "assistant", "content": reply.text or ""}
        finish, completion = "stop", reply.text or ""
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(body, completion),
    }


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {429: "rate_limit_exceeded", 500: "server_error"}.get(status, "invalid_request_error")
    return {"error": {"message": message, "type": kind, "code": str(status)}}


def _handler_for(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            record = RecordedRequest(self.path, dict(self.headers), body)
            with server._lock:  # recorded on arrival, so a request the client gave up on still counts
                server.requests.append(record)
                serial = len(server.requests)
            if self.path != CHAT_PATH:
                self._send(404, _error_body(404, f"no route {self.path}"), record)
                return
            refused = server.template_error(body)
            if refused is not None:
                self._send(500, _error_body(500, refused), record)
                return
            reply = server._next_reply()
            if reply is None:
                server.unscripted += 1
                self._send(500, _error_body(500, "script exhausted: no reply queued"), record)
                return
            if reply.delay_s and server._stopping.wait(reply.delay_s):
                return  # server stopped while this reply was still waiting
            if reply.raw_body is not None:
                self._send_raw(reply.status, reply.raw_body, record)
            elif reply.status != 200:
                self._send(reply.status, _error_body(reply.status, reply.error_message), record)
            else:
                self._send(200, _completion_body(reply, body, serial), record)

        def _send(self, status: int, payload: dict[str, Any], record: RecordedRequest) -> None:
            record.response.update(payload)
            send_json(self, status, json.dumps(payload).encode())  # the request is recorded whatever happens

        def _send_raw(self, status: int, text: str, record: RecordedRequest) -> None:
            record.response.update({"_raw": text})
            send_json(self, status, text.encode())  # a body that is not a completion, as a broken proxy sends

    return Handler
