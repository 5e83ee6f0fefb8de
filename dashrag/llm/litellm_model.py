"""LiteLLMModel: a function-calling chat model reached through litellm.

One component covers every provider litellm knows (``gpt-4o-mini``,
``anthropic/claude-...``) and any OpenAI-compatible server (``openai/<name>`` plus
``api_base``: llama.cpp, vLLM, Ollama's OpenAI endpoint). Each call is exactly one
HTTP request with the tool forced (:func:`dashrag.llm.tool_call.call_tool`); whether
to try again is the reranker's decision, recorded in its trace.

**The credential.** ``credential`` is a component (default ``EnvCredential`` reading
``OPENAI_API_KEY``) holding only the *name* of an environment variable; the key is
read when a request is sent, never at build time, so a tree can be validated, built,
saved and shown without any key present. The rule for an unset variable:

* no ``api_base`` (a hosted provider): :class:`~dashrag.errors.CredentialError` naming
  the variable, before any request;
* with ``api_base`` (a server you run, which usually needs no key): the request goes
  out with the placeholder key :data:`NO_KEY`. A placeholder rather than no key at
  all because litellm, given no key, falls back to ``OPENAI_API_KEY`` from the
  environment and would send *that* secret to whatever server ``api_base`` names.
  A server that does want a key answers 401 (``litellm.AuthenticationError``).

**Function calling.** The selection contract needs forced function calls. Where
litellm's bundled model list knows the model and says it cannot call functions
(``gpt-3.5-turbo-instruct``), the first call raises a ConfigError before any request.
Models the list does not know (every local server's) are trusted; a server that
ignores the forced tool choice is caught by the answer validator.

**The answer is masked too.** Errors are masked by ``call_tool``; the answer itself
(tool-call arguments and text) has the key replaced by ``[REDACTED]`` here, because it
is written into traces and SelectionErrors verbatim and a server may echo the key.

**Retry feedback.** After an invalid answer the reranker tells the model what was wrong.
``retry_feedback`` says how, after an answer with tool calls: ``tool_message`` (the
OpenAI protocol: hosted providers refuse a tool call left without its ``tool`` reply)
or ``user_message`` (for a server whose chat template knows only system/user/assistant,
as llama.cpp's ``chatml-function-calling`` does: it drops a ``tool`` message's text, and
stricter templates refuse it with HTTP 500). ``auto`` picks ``user_message`` when
``api_base`` names a server you run (its template is unknown, and a user message
reaches every template) and ``tool_message`` otherwise (:attr:`LiteLLMModel.feedback_mode`).

**Usage and cost** come back with every call (:class:`~dashrag.llm.tool_call.ToolCallResult`);
cost is litellm's price for the model, or None where litellm has no price.

litellm is imported on the first call only (it takes seconds to import).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Literal, Mapping, Sequence

from pydantic import Field

from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams, ComponentSpec, ParamKind, component_field, kind_field, spec
from dashrag.core.registry import register
from dashrag.errors import ConfigError, LLMError
from dashrag.llm.credential import EnvCredential
from dashrag.llm.redaction import redact
from dashrag.llm.tool_call import ToolCallResult, call_tool, load_litellm

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "openai/gpt-4o-mini"
#: Sent to a self-hosted ``api_base`` when the credential's variable is unset (see the module docstring).
NO_KEY = "no-key"


class LiteLLMParams(ComponentParams):
    model: str = Field(DEFAULT_MODEL, min_length=1, description=(
        "litellm model string: a provider model (gpt-4o-mini, anthropic/claude-3-5-haiku-latest) or "
        "openai/<name> for any OpenAI-compatible server given by api_base. It must support function calling."))
    api_base: str | None = kind_field(
        ParamKind.ENDPOINT, None, unset_reaches="the provider's own endpoint, chosen by model", min_length=1,
        description=(
        "Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8765/v1 (None: the provider's own)."))
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature; 0 makes the selection repeatable.")
    timeout: float = Field(60.0, gt=0, le=600, description=(
        "Seconds to wait for one answer before giving up (litellm.Timeout)."))
    max_tokens: int | None = Field(256, ge=1, le=32_768, description=(
        "Most tokens the model may generate per answer (a selection needs a few dozen); None: the server's default."))
    retry_feedback: Literal["auto", "tool_message", "user_message"] = Field("auto", description=(
        "How the reason for a refused answer reaches the model on a retry: tool_message (the OpenAI protocol), "
        "user_message (chat templates that know only system/user/assistant, e.g. llama.cpp's), or auto: "
        "user_message when api_base is set, tool_message otherwise."))
    credential: ComponentSpec = component_field(
        "credential", spec("EnvCredential", var="OPENAI_API_KEY"),
        description="Where the API key is read from when a request is sent (a reference, never the key).")


@register(
    kind="llm",
    icon="Bot",
    category="llm",
    en=("LLM (litellm)", "A function-calling chat model from any provider, or any OpenAI-compatible server."),
    es=(
        "LLM (litellm)",
        "Un modelo de chat con llamada a funciones de cualquier proveedor o servidor compatible con OpenAI.",
    ),
    representation={"en": "{model}", "es": "{model}"},
)
class LiteLLMModel(ConfigObject[LiteLLMParams]):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._checked = False
        self._closed = False
        self._lock = threading.Lock()

    @property
    def credential(self) -> EnvCredential:
        return self.nested["credential"]

    @classmethod
    def needed_credentials(cls, params: LiteLLMParams) -> tuple[str, ...]:
        """A hosted provider (no ``api_base``) needs the key; a server you run gets a placeholder without one."""
        return ("credential",) if params.api_base is None else ()

    def api_key(self) -> str:
        """The key for the next request, read now (see the module docstring for an unset variable)."""
        if "credential" in self.needed_credentials(self.params):
            return self.credential.resolve()
        return self.credential.resolve_or_none() or NO_KEY

    @property
    def feedback_mode(self) -> str:
        """``retry_feedback`` with ``auto`` resolved: ``tool_message`` or ``user_message`` (module docstring)."""
        mode = self.params.retry_feedback
        if mode != "auto":
            return mode
        return "tool_message" if self.params.api_base is None else "user_message"

    def check_function_calling(self) -> None:
        """Refuse a model that litellm's model list knows and marks as unable to call functions."""
        with self._lock:
            if self._checked:
                return
            litellm = load_litellm()
            model = self.params.model
            try:
                litellm.get_model_info(model)
            except Exception:  # not in litellm's list: a local or custom model, trusted
                known, supports = False, True
            else:
                known = True
                try:
                    supports = bool(litellm.supports_function_calling(model=model))
                except Exception:
                    supports = False
            if known and not supports:
                raise ConfigError(
                    f"{self.component_name}: model {model!r} does not support function calling "
                    "(litellm's model list); the selection needs a model that does"
                )
            self._checked = True

    def call_tool(self, messages: Sequence[Mapping[str, Any]], tool_schema: Mapping[str, Any]) -> ToolCallResult:
        """One forced call of ``tool_schema``'s function: one HTTP request, backend errors propagate."""
        if self._closed:
            raise LLMError(f"{self.component_name} ({self.params.model}) was closed")
        self.check_function_calling()
        p = self.params
        key = self.api_key()
        logger.debug("calling %s%s", p.model, f" at {p.api_base}" if p.api_base else "")
        result = call_tool(
            p.model,
            messages,
            tool_schema,
            api_base=p.api_base,
            api_key=key,
            temperature=p.temperature,
            timeout=p.timeout,
            max_tokens=p.max_tokens,
        )
        # the answer goes into traces and errors: a model (or a proxy) echoing the key must not put it there
        return result._replace(tool_calls=redact(result.tool_calls, key), content=redact(result.content, key))

    @property
    def closed(self) -> bool:
        return self._closed

    def _close(self) -> None:
        """After close the model refuses calls: it is released, the reranker above it is done."""
        self._closed = True
