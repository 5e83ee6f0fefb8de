"""The ``select_best_chunks`` contract: the tool schema the model is forced to call, and
the strict check of what it answered.

Why strict: the model's answer decides which chunks the user sees, so anything that
is not exactly a list of distinct candidate numbers is refused rather than repaired.
A refused answer comes back as a :class:`SelectionVerdict` whose ``problem`` is one
short sentence naming what was wrong; the reranker sends it back to the model as the
retry message (see :func:`retry_message`) and writes it into the trace.

The checks, in order (docs/agentic.md):

1. exactly one tool call, of the function ``select_best_chunks``;
2. its ``arguments`` string parses as JSON, an object whose only key is ``indices``;
3. ``indices`` is a list of JSON integers: ``true``/``false`` are not integers (in
   Python ``bool`` is an ``int`` subclass, so this is checked explicitly), ``"3"``
   is a string and ``3.0`` is a number, both refused: a model that cannot emit the
   integer the schema asks for is asked again rather than guessed at;
4. every index is within ``1..n`` (1-based, as the candidates are numbered), none
   repeats, and there are at least one and at most ``top_k``.

Every problem of step 3-4 is reported, not only the first, so one retry can fix all.
An accepted answer yields the 0-based indices in the order the model named them.

The JSON Schema of the tool says the same thing (``minimum``/``maximum``,
``minItems``/``maxItems``, ``uniqueItems``), which guides a model and lets a server
that enforces schemas by grammar narrow what it can emit. It guarantees nothing:
llama-cpp-python's schema-to-grammar conversion ignores ``minimum``/``maximum`` and
``uniqueItems`` (a real llama.cpp server answered ``[40, 41, 42]`` for 8 candidates),
so this check is what guarantees a correct selection, whatever the server. The schema
is, by the JSON Schema rules, a little looser in one place: it counts ``3.0`` as an
integer; the check above does not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from dashrag.errors import ConfigError

SELECT_FUNCTION_NAME = "select_best_chunks"
_MAX_REPORTED = 5  # problems named in one verdict; the rest are counted


@dataclass(frozen=True)
class SelectionVerdict:
    """Either ``indices`` (0-based, in the model's order) or a ``problem`` sentence."""

    indices: tuple[int, ...] | None = None
    problem: str | None = None

    @property
    def accepted(self) -> bool:
        return self.problem is None

    def to_json(self) -> dict[str, Any]:
        if self.accepted:
            return {"accepted": True, "indices": [i + 1 for i in self.indices or ()]}
        return {"accepted": False, "problem": self.problem}


def selection_tool_schema(n_candidates: int, top_k: int) -> dict[str, Any]:
    """The ``tools`` entry for ``select_best_chunks`` over ``n_candidates`` numbered candidates."""
    _check_sizes(n_candidates, top_k)
    most = min(top_k, n_candidates)
    return {
        "type": "function",
        "function": {
            "name": SELECT_FUNCTION_NAME,
            "description": (
                f"Select the candidates that best answer the query: between 1 and {most} "
                f"distinct candidate numbers from 1 to {n_candidates}, best first."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "indices": {
                        "type": "array",
                        "description": "Candidate numbers, best first.",
                        "items": {"type": "integer", "minimum": 1, "maximum": n_candidates},
                        "minItems": 1,
                        "maxItems": most,
                        "uniqueItems": True,
                    }
                },
                "required": ["indices"],
                "additionalProperties": False,
            },
        },
    }


def forced_tool_choice(function_name: str = SELECT_FUNCTION_NAME) -> dict[str, Any]:
    """The OpenAI ``tool_choice`` that leaves the model no other function and no plain text."""
    return {"type": "function", "function": {"name": function_name}}


def validate_selection(
    tool_calls: Sequence[Mapping[str, Any]], n_candidates: int, top_k: int
) -> SelectionVerdict:
    """Check the raw tool calls of one answer (``[{"function": {"name", "arguments"}}]``)."""
    _check_sizes(n_candidates, top_k)
    if not tool_calls:
        return _refuse(f"the answer called no function; call {SELECT_FUNCTION_NAME}")
    if len(tool_calls) > 1:
        return _refuse(f"the answer made {len(tool_calls)} function calls; make exactly one")
    function = tool_calls[0].get("function") if isinstance(tool_calls[0], Mapping) else None
    if not isinstance(function, Mapping):
        return _refuse("the tool call has no function")
    name = function.get("name")
    if name != SELECT_FUNCTION_NAME:
        return _refuse(f"called function {_show(name)}, expected {SELECT_FUNCTION_NAME!r}")
    raw = function.get("arguments")
    if not isinstance(raw, str):
        return _refuse("the function arguments are not a JSON string")
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as exc:
        return _refuse(f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})")
    return _check_arguments(arguments, n_candidates, top_k)


def retry_message(problem: str, n_candidates: int, top_k: int) -> str:
    """What the model is told after an invalid answer: what was wrong and what is expected."""
    most = min(top_k, n_candidates)
    return (
        f"Your previous answer was invalid: {problem}. Call {SELECT_FUNCTION_NAME} again "
        f"with 1 to {most} distinct integers between 1 and {n_candidates}, best first."
    )


#: How the retry message reaches the model after an answer with tool calls (see :func:`follow_up_messages`).
FEEDBACK_MODES = ("tool_message", "user_message")


def follow_up_messages(
    tool_calls: Sequence[Mapping[str, Any]], content: str | None, problem: str, n_candidates: int, top_k: int,
    feedback: str = "tool_message",
) -> list[dict[str, Any]]:
    """The messages that append a refused answer and the retry message to a conversation.

    The model sees its own answer and why it was refused. The assistant turn always has
    a string ``content`` (``""`` when the model sent none): litellm drops a ``None``
    content, and a chat template that reads ``message.content`` (llama.cpp's, through
    jinja's strict undefined) then fails with HTTP 500.

    After an answer with tool calls, ``feedback`` says how the retry message travels:

    * ``"tool_message"``: one ``tool`` message per call id, as the OpenAI protocol
      requires (hosted providers refuse an assistant tool call left without its reply);
    * ``"user_message"``: one ``user`` message, for servers whose chat template knows
      only system/user/assistant (a ``tool`` message is then dropped or refused, and the
      model would never learn what was wrong).

    After a plain-text answer the retry message is always a ``user`` message.
    """
    if feedback not in FEEDBACK_MODES:
        raise ConfigError(f"feedback must be one of {', '.join(FEEDBACK_MODES)}, not {feedback!r}")
    message = retry_message(problem, n_candidates, top_k)
    if not tool_calls:
        return [{"role": "assistant", "content": content or ""}, {"role": "user", "content": message}]
    calls = [dict(call) for call in tool_calls]
    assistant = {"role": "assistant", "content": content or "", "tool_calls": calls}
    if feedback == "user_message":
        return [assistant, {"role": "user", "content": message}]
    return [assistant] + [
        {"role": "tool", "tool_call_id": call.get("id", ""), "content": message} for call in calls
    ]


def _check_arguments(arguments: Any, n_candidates: int, top_k: int) -> SelectionVerdict:
    if not isinstance(arguments, dict):
        return _refuse(f"the arguments must be a JSON object, got {_json_type(arguments)}")
    extra = sorted(set(arguments) - {"indices"})
    if extra:
        return _refuse(f"unexpected argument {_show(extra[0])}; the only argument is 'indices'")
    if "indices" not in arguments:
        return _refuse("the arguments lack 'indices'")
    indices = arguments["indices"]
    if not isinstance(indices, list):
        return _refuse(f"'indices' must be a list of integers, got {_json_type(indices)}")
    if not indices:
        return _refuse("'indices' is empty; select at least one candidate")
    problems: list[str] = []
    if len(indices) > top_k:
        problems.append(f"{len(indices)} indices given, at most {top_k} allowed")
    seen: set[int] = set()
    for value in indices:
        if not _is_json_integer(value):
            problems.append(f"index {_show(value)} is not an integer")
        elif not 1 <= value <= n_candidates:
            problems.append(f"index {value} is out of range 1..{n_candidates}")
        elif value in seen:
            problems.append(f"index {value} appears more than once")
        else:
            seen.add(value)
    if problems:
        return _refuse(_summarise(problems))
    return SelectionVerdict(indices=tuple(v - 1 for v in indices))


def _is_json_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _summarise(problems: list[str]) -> str:
    unique = list(dict.fromkeys(problems))
    shown = "; ".join(unique[:_MAX_REPORTED])
    hidden = len(unique) - _MAX_REPORTED
    return shown + (f"; and {hidden} more problems" if hidden > 0 else "")


def _refuse(problem: str) -> SelectionVerdict:
    return SelectionVerdict(problem=problem)


def _show(value: Any) -> str:
    """A value as JSON text, shortened: the model sees exactly what it sent."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    names = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def _check_sizes(n_candidates: int, top_k: int) -> None:
    if n_candidates < 1 or top_k < 1:
        raise ConfigError(f"selection needs n_candidates >= 1 and top_k >= 1, got {n_candidates} and {top_k}")
