"""Step 3: query rewrite by an LLM, best-effort and fail-open.

The rewrite goes through the project's :class:`~dashrag.llm.litellm_model.LiteLLMModel`
(one forced call of the ``rewrite_query`` function, through litellm; the API key is a
credential *reference*, read when the request is sent). Any exception, a timeout,
or an empty rewrite falls back to the original query; the outcome's ``status`` says
which happened (``rewritten``, ``error``, ``timeout``, ``empty``), and ``off`` when
no rewrite model is configured.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_component
from dashrag.errors import LLMBackendError

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

Status = Literal["off", "rewritten", "error", "timeout", "empty"]


@dataclass(frozen=True)
class RewriteOutcome:
    query: str  # the query the search uses: the rewrite, or the original on any failure
    status: Status
    detail: str | None = None
    elapsed_ms: float = 0.0


def rewritten_text(tool_calls: list[dict[str, Any]], content: str | None) -> str:
    """The rewrite from a forced call's arguments (or the plain text of a server that ignored the tool)."""
    if tool_calls:
        arguments = json.loads(tool_calls[0]["function"]["arguments"] or "{}")
        value = arguments.get("query") if isinstance(arguments, dict) else None
        if not isinstance(value, str):
            raise ValueError("the rewrite_query call has no string 'query'")
        return value.strip()
    return (content or "").strip()


class QueryRewriter:
    def __init__(self, model: ConfigObject):
        self.model = model

    @property
    def name(self) -> str:
        return f"{self.model.component_name}({getattr(self.model.params, 'model', '')})"

    def rewrite(self, query: str) -> RewriteOutcome:
        start = time.perf_counter()

        def outcome(used: str, status: Status, detail: str | None = None) -> RewriteOutcome:
            return RewriteOutcome(used, status, detail, (time.perf_counter() - start) * 1000)

        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": query}]
        try:
            result = self.model.call_tool(messages, REWRITE_TOOL)  # type: ignore[attr-defined]
            text = rewritten_text(result.tool_calls, result.content)
        except Exception as exc:  # fail-open: the original query is always a valid search
            # every backend failure is an LLMBackendError (dashrag/llm/tool_call.py); its kind says a timeout
            timeout = isinstance(exc, TimeoutError) or getattr(exc, "kind", None) == "timeout"
            detail = type(exc.__cause__ or exc).__name__ if isinstance(exc, LLMBackendError) else type(exc).__name__
            return outcome(query, "timeout" if timeout else "error", detail)
        if not text:
            return outcome(query, "empty")
        return outcome(text, "rewritten")


def rewriter_from_settings(llm_config: dict | None, model: str | None, api_base: str | None, key_var: str,
                           timeout: float) -> QueryRewriter | None:
    """The configured rewriter: an LLM component config, else ``RAG_LLM_MODEL`` (+ base, key var); else None."""
    if llm_config is None and model is None:
        return None
    config = llm_config or {"component": "LiteLLMModel", "params": {
        "model": model, "api_base": api_base, "timeout": timeout, "max_tokens": 128,
        "credential": {"component": "EnvCredential", "params": {"var": key_var}}}}
    return QueryRewriter(build_component(config, "llm"))
