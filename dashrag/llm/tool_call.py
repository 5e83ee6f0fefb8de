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
* **No hidden retries.** ``num_retries=0`` (litellm) and ``max_retries=0`` (the
  openai SDK beneath it): one call is one HTTP request. Whether to try again is the
  reranker's decision, which it records in the trace.
* **Backend errors propagate with their litellm class** (``litellm.Timeout``,
  ``litellm.RateLimitError``, ``litellm.InternalServerError``, ...; the full list
  measured against a live server is in docs/agentic.md), after the API key has been
  masked in their messages (:mod:`dashrag.llm.redaction`): a server may echo the
  key it rejected.
* **Cost where litellm knows the price.** ``litellm.completion_cost`` raises for a
  model missing from its price list (every local server's model); that is reported
  as ``None``, never as 0.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Mapping, NamedTuple, Sequence

from dashrag.llm.redaction import redacting_logs, scrub_exception
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
        raise
    latency_ms = (time.perf_counter() - started) * 1000.0
    message = response.choices[0].message
    result = ToolCallResult(
        tool_calls=[_plain_tool_call(call) for call in (message.tool_calls or [])],
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
