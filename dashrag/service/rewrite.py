"""Step 3: query rewrite by an LLM, best-effort and fail-open.

Two backends say how the rewrite is asked for (:class:`RewriteBackend`):

* :class:`UpstreamRewrite`, the reference's contract (``RAG_LLM_ENDPOINT`` / ``LLM_ENDPOINT``):
  ``POST`` the endpoint with ``{prompt, system_prompt, temperature, max_tokens, stream: false}``,
  bearer ``RAG_LLM_API_TOKEN`` (read when the request is sent), and read the answer's JSON ``text``;
  one kept-alive HTTP client, closed when the service shuts down, never following a redirect
  (the request carries the token);
* :class:`ToolCallRewrite`, the project's :class:`~dashrag.llm.litellm_model.LiteLLMModel` (or any
  LLM component config): one forced call of the ``rewrite_query`` function, through litellm.

Either way the answer's markdown fences (a model that answers ```` ```text ... ``` ````) are
stripped, and any exception, a timeout, or an empty rewrite falls back to the original query;
the outcome's ``status`` says which happened (``rewritten``, ``error``, ``timeout``, ``empty``),
and ``off`` when no rewrite is configured.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx

from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_component
from dashrag.errors import LLMBackendError
from dashrag.service.settings import ServiceSettings
from dashrag.urls import hide_url_secrets

REWRITE_FUNCTION = "rewrite_query"
REWRITE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": REWRITE_FUNCTION,
        "description": "Give the search query that best finds passages answering the user's question.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
SYSTEM_PROMPT = ("You rewrite a user's question into one search query for a document retriever: keep every "
                 "entity and constraint, drop chit-chat, do not answer. Call rewrite_query with the query.")
PLAIN_SYSTEM_PROMPT = ("You rewrite a user's question into one search query for a document retriever: keep every "
                       "entity and constraint, drop chit-chat, do not answer. Reply with the query only.")
FENCE_LINE = re.compile(r"^\s*```[\w+.-]*\s*$")

Status = Literal["off", "rewritten", "error", "timeout", "empty"]


@dataclass(frozen=True)
class RewriteOutcome:
    query: str  # the query the search uses: the rewrite, or the original on any failure
    status: Status
    detail: str | None = None
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class RewriteRequest:
    """What every backend is asked: the reference's ``RAG_REWRITE_*`` settings."""

    system_prompt: str | None  # None: the backend's own default
    temperature: float
    max_tokens: int
    timeout_sec: float


def strip_fences(text: str) -> str:
    """The text without its markdown code-fence lines (```` ``` ```` or ```` ```lang ````), trimmed."""
    return "\n".join(line for line in text.splitlines() if not FENCE_LINE.match(line)).strip()


def rewritten_text(tool_calls: list[dict[str, Any]], content: str | None) -> str:
    """The rewrite from a forced call's arguments (or the plain text of a server that ignored the tool)."""
    if tool_calls:
        arguments = json.loads(tool_calls[0]["function"]["arguments"] or "{}")
        value = arguments.get("query") if isinstance(arguments, dict) else None
        if not isinstance(value, str):
            raise ValueError("the rewrite_query call has no string 'query'")
        return value.strip()
    return (content or "").strip()


class RewriteBackend(Protocol):
    """Asks something for a rewrite of ``query``; raises on any failure (the rewriter falls back)."""

    @property
    def name(self) -> str: ...

    def rewrite_text(self, query: str) -> str: ...

    def close(self) -> None: ...


class ToolCallRewrite:
    """An LLM component asked through one forced ``rewrite_query`` call."""

    def __init__(self, model: ConfigObject, system_prompt: str | None = None):
        self.model = model
        self.system_prompt = system_prompt or SYSTEM_PROMPT

    @property
    def name(self) -> str:
        return f"{self.model.component_name}({getattr(self.model.params, 'model', '')})"

    def rewrite_text(self, query: str) -> str:
        messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": query}]
        result = self.model.call_tool(messages, REWRITE_TOOL)  # type: ignore[attr-defined]
        return rewritten_text(result.tool_calls, result.content)

    def close(self) -> None:
        self.model.close()


class UpstreamRewrite:
    """The reference's upstream endpoint: ``{prompt, system_prompt, temperature, max_tokens, stream}`` → ``text``."""

    def __init__(self, endpoint: str, token_vars: tuple[str, ...], request: RewriteRequest):
        self.endpoint = endpoint
        self.token_vars = token_vars  # read in order at each request; the first one set is the token
        self.request = request
        self._client = httpx.Client(timeout=request.timeout_sec, follow_redirects=False)

    @property
    def name(self) -> str:
        return f"upstream({hide_url_secrets(self.endpoint)})"

    def rewrite_text(self, query: str) -> str:
        token = next((os.environ[v] for v in self.token_vars if os.environ.get(v)), None)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        body = {"prompt": query, "system_prompt": self.request.system_prompt or PLAIN_SYSTEM_PROMPT,
                "temperature": self.request.temperature, "max_tokens": self.request.max_tokens, "stream": False}
        try:
            response = self._client.post(self.endpoint, json=body, headers=headers)
        except httpx.TimeoutException:
            raise TimeoutError(f"no answer within {self.request.timeout_sec:g} s") from None
        if response.status_code != 200:
            raise ConnectionError(f"the rewrite endpoint answered HTTP {response.status_code}")
        text = response.json().get("text") if response.headers.get("content-type", "").startswith(
            "application/json") else None
        if not isinstance(text, str):
            raise ValueError("the rewrite endpoint's answer has no string 'text'")
        return text

    def close(self) -> None:
        self._client.close()


class QueryRewriter:
    def __init__(self, backend: RewriteBackend):
        self.backend = backend

    @property
    def name(self) -> str:
        return self.backend.name

    def rewrite(self, query: str) -> RewriteOutcome:
        start = time.perf_counter()

        def outcome(used: str, status: Status, detail: str | None = None) -> RewriteOutcome:
            return RewriteOutcome(used, status, detail, (time.perf_counter() - start) * 1000)

        try:
            text = strip_fences(self.backend.rewrite_text(query))
        except Exception as exc:  # fail-open: the original query is always a valid search
            # every backend failure is an LLMBackendError (dashrag/llm/tool_call.py); its kind says a timeout
            timeout = isinstance(exc, TimeoutError) or getattr(exc, "kind", None) == "timeout"
            detail = type(exc.__cause__ or exc).__name__ if isinstance(exc, LLMBackendError) else type(exc).__name__
            return outcome(query, "timeout" if timeout else "error", detail)
        if not text:
            return outcome(query, "empty")
        return outcome(text, "rewritten")

    def close(self) -> None:
        self.backend.close()


def rewriter_from_settings(settings: ServiceSettings) -> QueryRewriter | None:
    """The configured rewriter: the upstream endpoint, else an LLM component config, else ``RAG_LLM_MODEL``
    (+ base, key var); None when none is configured or ``rewrite_enabled`` is false."""
    s = settings
    request = RewriteRequest(s.rewrite_system_prompt, s.rewrite_temperature, s.rewrite_max_tokens,
                             s.llm_timeout_sec)
    if not s.rewrite_enabled:
        return None
    if s.llm_endpoint is not None:
        return QueryRewriter(UpstreamRewrite(s.llm_endpoint, s.llm_token_vars(), request))
    if s.llm is None and s.llm_model is None:
        return None
    config = s.llm or {"component": "LiteLLMModel", "params": {
        "model": s.llm_model, "api_base": s.llm_api_base, "timeout": request.timeout_sec,
        "max_tokens": request.max_tokens, "temperature": request.temperature,
        "credential": {"component": "EnvCredential", "params": {"var": s.llm_api_key_var}}}}
    return QueryRewriter(ToolCallRewrite(build_component(config, "llm"), request.system_prompt))
