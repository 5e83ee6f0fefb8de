"""What ``dashrag rerank`` and :class:`~dashrag.rerank.pipeline.RerankPipeline` take and give: a query with its
candidates (ids, texts, optional first-stage scores), and the candidates reranked.

The candidates come from somewhere else (a vector database, a search engine, another service), so
they are checked like any outside input: strict JSON (no key twice, no NaN), every field of the
right type, no unknown field, ids unique, each error naming the request and the field. A
candidate's ``score`` is its first-stage relevance (higher is better); a candidate given none
counts as 0.0 (the reference service's rule for a rerank entry without a score), so a list
without scores keeps its order.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dashrag.core.config_json import RefusedJSON, strict_loads
from dashrag.errors import QueryError, excerpt

MAX_CANDIDATES = 10_000  # per request: a bound on the work one request asks for (docs/security.md's spirit)


class Candidate(BaseModel):
    """One candidate: its id (kept as given), its text, and optionally its first-stage score and metadata."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str | int = Field(description="The candidate's id, returned as given.")
    text: str = Field(description="The text the rerankers read.")
    score: float | None = Field(None, description="Its first-stage relevance, higher is better; none counts as 0.0.")
    metadata: dict[str, Any] | None = Field(None, description="Anything to carry through to the answer.")

    @field_validator("id")
    @classmethod
    def _no_boolean_id(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("an id is a string or an integer, not a boolean")
        return value

    @field_validator("score")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("a score is a finite number")
        return value

    @property
    def first_score(self) -> float:
        return 0.0 if self.score is None else float(self.score)


class RerankRequest(BaseModel):
    """A query and the candidates to rerank for it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    query: str = Field(min_length=1, description="What the candidates are reranked for.")
    candidates: list[Candidate] = Field(max_length=MAX_CANDIDATES, description="The candidates, in any order.")

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query is empty")
        return value

    @model_validator(mode="after")
    def _unique_ids(self) -> RerankRequest:
        seen: dict[str | int, int] = {}
        for position, candidate in enumerate(self.candidates):
            if candidate.id in seen:
                raise ValueError(f"candidates[{position}] repeats the id {excerpt(candidate.id)} of "
                                 f"candidates[{seen[candidate.id]}]")
            seen[candidate.id] = position
        return self


def request_from(raw: Any, where: str) -> RerankRequest:
    """``raw`` (parsed JSON) as a request; a QueryError naming ``where`` and the field otherwise."""
    if not isinstance(raw, dict):
        raise QueryError(f"{where}: expected an object {{\"query\": ..., \"candidates\": [...]}}, "
                         f"got {type(raw).__name__}")
    try:
        return RerankRequest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
        message = first["msg"].removeprefix("Value error, ")
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise QueryError(f"{where}: {field + ': ' if field else ''}{message}{more}") from None


def read_requests(text: str, where: str) -> tuple[list[RerankRequest], bool]:
    """The requests in ``text``: one JSON object, or JSON Lines (one object per non-blank line).

    Returns the requests and whether the text was JSON Lines (so the answer is written the same way).
    """
    try:
        return [request_from(_loads(text, where), where)], False
    except _NotOneValue:
        pass
    requests = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            requests.append(request_from(_loads(line, f"{where} line {number}", lines=True), f"{where} line {number}"))
    if not requests:
        raise QueryError(f"{where}: no request (expected {{\"query\": ..., \"candidates\": [...]}})")
    return requests, True


class _NotOneValue(Exception):
    """The text is not one JSON value: perhaps JSON Lines."""


def _loads(text: str, where: str, lines: bool = False) -> Any:
    try:
        return strict_loads(text, finite=True)
    except RefusedJSON as exc:
        raise QueryError(f"{where}: {exc.msg}") from None
    except RecursionError:
        raise QueryError(f"{where}: nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError
        if not lines and "Extra data" in str(exc):
            raise _NotOneValue from None
        if not lines and not text.strip():
            raise QueryError(f"{where}: empty input (expected {{\"query\": ..., \"candidates\": [...]}})") from None
        line, column = getattr(exc, "lineno", 0), getattr(exc, "colno", 0)
        at = f" column {column}" if lines else f" at line {line} column {column}"
        raise QueryError(f"{where}: malformed JSON{at}: {getattr(exc, 'msg', exc)}") from None


class RankedCandidate(BaseModel):
    """A candidate as the pipeline returns it: ``score`` is the last stage's that scored it."""

    model_config = ConfigDict(frozen=True)

    id: str | int
    text: str
    rank: int = Field(description="1-based position in the answer.")
    score: float = Field(description="The relevance the order is by: the last stage's that scored it.")
    scored_by: str = Field(description="That stage: 'input', 'stage1' or 'stage2'.")
    input_rank: int = Field(description="1-based position in the first-stage order (by the given scores).")
    input_score: float | None
    stage1_score: float | None = None
    stage2_score: float | None = None
    mmr_score: float | None = Field(None, description="Its MMR value when MMR picked it (MMR re-orders, never "
                                    "re-scores).")
    metadata: dict[str, Any] | None = None


class RerankResult(BaseModel):
    """The reranked candidates of one request, and how the pipeline got there."""

    model_config = ConfigDict(frozen=True)

    query: str
    results: list[RankedCandidate]
    selection: dict[str, Any] = Field(description="Which path ran and why, how many each stage saw, times per stage.")
