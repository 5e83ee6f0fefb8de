"""SelectionPrompt: the messages that ask a model to pick the best candidates.

The prompt is a component so a user can reword it in the tree's JSON (another
language, a domain hint) without touching code, while the parts the selection
contract depends on stay guaranteed: a template must use each of ``{query}``,
``{candidates}`` and ``{top_k}`` exactly as named, and nothing else. A template
missing one would silently ask the model without the query, or without the
candidates; an unknown placeholder would fail at the first query. Both are found
at validation, with the JSON path of the field (``params.prompt.params.template:
...``), before anything is built. Literal braces are written doubled (``{{``), as
in ``str.format``.

``{candidates}`` is filled with :func:`dashrag.llm.candidates.render_candidates`:
one line per candidate, each text a JSON string, so candidate text can neither
start a new numbered line nor pass for instructions. The default system message
says so (``CANDIDATES_PREAMBLE``) and asks for the function call only.
"""

from __future__ import annotations

import string
from typing import Any, Sequence

from pydantic import Field, field_validator

from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams
from dashrag.core.registry import register
from dashrag.llm.candidates import CANDIDATES_PREAMBLE, render_candidates
from dashrag.llm.selection import SELECT_FUNCTION_NAME

PLACEHOLDERS = ("query", "candidates", "top_k")

DEFAULT_SYSTEM = (
    "You judge search results. Given a query and numbered candidate passages, you select the "
    "passages that best answer the query, best first. "
    f"{CANDIDATES_PREAMBLE} Answer only by calling {SELECT_FUNCTION_NAME}."
)

DEFAULT_TEMPLATE = (
    "Query: {query}\n\n"
    "Candidates:\n{candidates}\n\n"
    "Select up to {top_k} candidates that best answer the query, best first, "
    f"by calling {SELECT_FUNCTION_NAME} with their numbers."
)


def template_fields(template: str) -> list[str]:
    """The placeholder names of a ``str.format`` template, in order (raises ValueError on bad braces)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def check_template(template: str) -> str:
    """Exactly the placeholders {query}, {candidates}, {top_k}: each present, no other."""
    try:
        fields = template_fields(template)
    except ValueError as exc:
        raise ValueError(
            f"the template is not a valid format string ({exc}); write literal braces as {{{{ and }}}}"
        ) from None
    missing = [p for p in PLACEHOLDERS if p not in fields]
    unknown = sorted({f for f in fields if f not in PLACEHOLDERS})
    problems = []
    if missing:
        problems.append("missing placeholder " + ", ".join("{" + p + "}" for p in missing))
    if unknown:
        shown = ", ".join("{" + f + "}" for f in unknown)
        problems.append(f"unknown placeholder {shown} (allowed: {{query}}, {{candidates}}, {{top_k}})")
    if problems:
        raise ValueError("; ".join(problems))
    return template


class SelectionPromptParams(ComponentParams):
    system: str = Field(DEFAULT_SYSTEM, min_length=1, description="The system message: the model's role and rules.")
    template: str = Field(
        DEFAULT_TEMPLATE,
        min_length=1,
        description=(
            "The user message. Must use {query}, {candidates} and {top_k}, and no other placeholder; "
            "write literal braces as {{ and }}."
        ),
    )

    @field_validator("template")
    @classmethod
    def _placeholders(cls, template: str) -> str:
        return check_template(template)


@register(
    kind="prompt",
    icon="MessageSquareText",
    category="llm",
    en=("Selection prompt", "Asks the model to select the best numbered candidates for a query."),
    es=("Prompt de selección", "Pide al modelo que elija los mejores candidatos numerados para una consulta."),
    representation={"en": "Selection prompt", "es": "Instrucción de selección"},
)
class SelectionPrompt(ConfigObject[SelectionPromptParams]):
    def render(self, query: str, candidate_texts: Sequence[str], top_k: int) -> list[dict[str, Any]]:
        """The chat messages for one selection call (``top_k`` as the model may use it: at most the count)."""
        user = self.params.template.format(
            query=query, candidates=render_candidates(candidate_texts), top_k=min(top_k, len(candidate_texts))
        )
        return [{"role": "system", "content": self.params.system}, {"role": "user", "content": user}]
