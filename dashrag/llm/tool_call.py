"""One forced function call through litellm: the only place dashrag talks to an LLM backend.

Why these choices:

* **litellm, imported lazily.** It reaches every provider and any OpenAI-compatible
  server (``model="openai/<name>"`` plus ``api_base``), but importing it takes
  seconds, so only a component that actually calls a model pays for it. Before the
  import, ``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set (unless the user set it) so
  litellm reads its bundled price list instead of fetching one: nothing downloads
  at run time. ``litellm.suppress_debug_info`` is switched on so a failing call
  does not print help banners to stdout.
* **Forced tool choice.** ``tool_choice`` names the one function of ``tool_schema``:
  the model may not answer in prose or call anything else. (A server that ignores
  this is caught by the validator in :mod:`dashrag.llm.selection`.)
* **No redirects.** The request carries the API key; a server answering 3xx would have it
  sent on (the openai SDK follows redirects, and a 302 turns into a GET elsewhere). So
  litellm's OpenAI-protocol clients (``litellm.client_session`` / ``aclient_session``,
  unless the application set its own) are httpx clients that never follow a redirect: a
  3xx is an HTTP error naming its status (docs/security.md).
* **No hidden retries.** ``num_retries=0`` (litellm) and ``max_retries=0`` (the
  openai SDK beneath it): one call is one HTTP request. Whether to try again is the
  reranker's decision, which it records in the trace.
* **Every backend failure is one** :class:`~dashrag.errors.LLMBackendError`: a timeout,
  a refused connection, an HTTP error (401, 429, 500, ...) or a body that is not a
  chat completion. Its message names the endpoint (model and base URL without any
  credentials in it, never the key) and the failure in one line; ``kind`` and
  ``status_code`` tell the cases apart, and litellm's exception (``litellm.Timeout``,
  ``litellm.RateLimitError``, ...; the full list measured against a live server is in
  docs/agentic.md) is chained as its ``__cause__``, with the API key masked in it
  and in everything chained to it (:mod:`dashrag.llm.redaction`): a server may echo
  the key it rejected. Exceptions that are not litellm's (bugs) propagate as they are.
* **Cost where litellm knows the price.** ``litellm.completion_cost`` raises for a
  model missing from its price list (every local server's model); that is reported
  as ``None``, never as 0.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from http import HTTPStatus
from typing import Any, Iterator, Mapping, NamedTuple, Sequence
from urllib.parse import urlsplit

from dashrag.errors import LLMBackendError
from dashrag.llm.redaction import redact, redacting_logs, scrub_exception
from dashrag.llm.selection import forced_tool_choice

logger = logging.getLogger(__name__)


class ToolCallResult(NamedTuple):
    """What one round trip produced; unpacks as ``tool_calls, usage, cost, latency_ms, content``.

    ``tool_calls`` are plain JSON-ready dicts (``{"id", "type", "function": {"name",
    "arguments"}}``) so they go into a trace as they are; ``content`` is the text the
    model sent instead of (or beside) a call, kept for the trace's "raw answer".
    """

    tool_calls: list[dict[str, Any]]
    usage: dict[str, int]
    cost: float | None
    latency_ms: float
    content: str | None = None


def load_litellm() -> Any:
    """Import litellm the offline way (bundled price list, no stdout banners)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    if litellm.client_session is None or litellm.aclient_session is None:
        import httpx

        litellm.client_session = litellm.client_session or httpx.Client(follow_redirects=False)
        litellm.aclient_session = litellm.aclient_session or httpx.AsyncClient(follow_redirects=False)
    return litellm


def call_tool(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tool_schema: Mapping[str, Any],
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.0,
    timeout: float = 60.0,
    max_tokens: int | None = None,
) -> ToolCallResult:
    """Send ``messages`` with ``tool_schema`` as the one, forced tool; one HTTP request, no retries."""
    litellm = load_litellm()
    function_name = tool_schema["function"]["name"]
    started = time.perf_counter()
    try:
        with redacting_logs(api_key or ""):
            response = litellm.completion(
                model=model,
                messages=[dict(m) for m in messages],
                tools=[dict(tool_schema)],
                tool_choice=forced_tool_choice(function_name),
                api_base=api_base,
                api_key=api_key,
                temperature=temperature,
                timeout=timeout,
                max_tokens=max_tokens,
                num_retries=0,
                max_retries=0,
            )
    except Exception as exc:
        scrub_exception(exc, api_key or "")
        if not _is_backend_failure(exc):
            raise  # not litellm's: a bug, kept with its traceback
        raise backend_error(exc, model, api_base, timeout, api_key) from exc
    latency_ms = (time.perf_counter() - started) * 1000.0
    try:
        message = response.choices[0].message
        tool_calls = [_plain_tool_call(call) for call in (message.tool_calls or [])]
    except (AttributeError, IndexError, TypeError) as exc:  # litellm let through something that is not a completion
        raise LLMBackendError(endpoint_name(model, api_base), f"the answer is not a chat completion ({exc})",
                              "malformed_answer") from None
    result = ToolCallResult(
        tool_calls=tool_calls,
        usage=_usage(response),
        cost=_cost(litellm, response),
        latency_ms=latency_ms,
        content=message.content,
    )
    logger.debug(
        "%s: %d tool call(s) in %.1f ms, usage %s, cost %s",
        model, len(result.tool_calls), latency_ms, result.usage, result.cost,
    )
    return result


def endpoint_name(model: str, api_base: str | None) -> str:
    """The model and where it is served, for messages: a URL's user, password and query are left out."""
    if api_base is None:
        return f"{model} (the provider's endpoint)"
    parts = urlsplit(api_base)
    host = parts.hostname or ""
    where = f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}" if host else "the api_base"
    return f"{model} at {where}"


def backend_error(exc: BaseException, model: str, api_base: str | None, timeout: float,
                  api_key: str | None) -> LLMBackendError:
    """The one-line :class:`LLMBackendError` for an exception litellm raised (already scrubbed of the key).

    What happened is read from the openai exceptions litellm chains beneath its own:
    an ``APIStatusError`` carries the HTTP status and the server's error body, an
    ``APITimeoutError`` a timeout, an ``APIConnectionError`` a failed connection (litellm
    reports a refused connection as ``InternalServerError``, so its class alone says
    nothing). Anything else litellm raised came from reading the answer: malformed.
    """
    import openai

    chain = list(_chain(exc))
    # litellm's classes subclass openai's, whatever happened: only the openai SDK's own exception says what did
    sdk = [e for e in chain if type(e).__module__.split(".")[0] == "openai"]
    status = next((e for e in sdk if isinstance(e, openai.APIStatusError)), None)
    endpoint = endpoint_name(model, api_base)
    if status is not None:
        code = int(status.status_code)
        failure = f"HTTP {code} {_reason(code)}: {_server_message(status)}"
        return LLMBackendError(endpoint, redact(failure, api_key or ""), "http", code)
    if any(isinstance(e, openai.APITimeoutError) for e in sdk):
        return LLMBackendError(endpoint, f"no answer within {timeout:g} s (timeout)", "timeout")
    if any(isinstance(e, openai.APIConnectionError) for e in sdk):
        root = chain[-1] if len(chain) > 1 else exc
        return LLMBackendError(endpoint, redact(f"cannot connect ({_one_line(str(root))})", api_key or ""),
                               "connection")
    decode = next((e for e in chain if isinstance(e, json.JSONDecodeError)), None)
    detail = f"not JSON: {decode}" if decode is not None else _litellm_text(str(exc))
    return LLMBackendError(endpoint, redact(f"the answer is not a chat completion ({_one_line(detail)})",
                                            api_key or ""), "malformed_answer")


def _is_backend_failure(exc: BaseException) -> bool:
    import openai  # litellm's exceptions all derive from the openai SDK's

    return isinstance(exc, openai.OpenAIError)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _reason(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return ""


def _server_message(error: Any) -> str:
    """The message of an OpenAI-style error body (``{"error": {"message": ...}}``), or the body itself."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = inner.get("message") if isinstance(inner, dict) else inner
        text = text if text is not None else body.get("detail", body)
    else:
        text = body if body is not None else getattr(error, "message", "")
    return _one_line(text if isinstance(text, str) else json.dumps(text, ensure_ascii=False))


_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+: |\w+Error: |OpenAIException - |LiteLLM: |error - )+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_MAX_DETAIL = 300


def _litellm_text(text: str) -> str:
    """litellm's message without the class names it stacks in front of it."""
    return _LITELLM_PREFIX.sub("", text)


def _one_line(text: str) -> str:
    """Server text made safe for a one-line message: no control characters, at most 300 characters."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= _MAX_DETAIL else flat[: _MAX_DETAIL - 1] + "…"


def _plain_tool_call(call: Any) -> dict[str, Any]:
    function = call.function
    return {
        "id": call.id,
        "type": getattr(call, "type", None) or "function",
        "function": {"name": function.name, "arguments": function.arguments},
    }


def _usage(response: Any) -> dict[str, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return {}
    fields = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {name: int(getattr(usage, name)) for name in fields if getattr(usage, name, None) is not None}


def _cost(litellm: Any, response: Any) -> float | None:
    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:  # litellm raises for models missing from its price list
        return None
    return None if cost is None else float(cost)
