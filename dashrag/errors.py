"""One exception hierarchy for everything dashrag refuses.

Every error a user can cause (a config, a query, a file, a saved folder, an LLM
answer) is a :class:`DashragError` whose message says *what* was wrong and *where*,
so the CLI can print it as one line and exit non-zero instead of a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

#: The most characters of an offending input an error message quotes.
EXCERPT_CHARS = 80


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """``repr`` of ``value`` cut to ``limit`` characters, saying how long it was.

    Why: an error message quotes what was wrong so the user can find it, but a 1 MB
    component name or document must not be echoed whole into a terminal or a log.
    """
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(text) if isinstance(value, str) else text
    shown = repr(text[:limit]) if isinstance(value, str) else text[:limit]
    return f"{shown}… ({len(text):,} characters)"


class DashragError(Exception):
    """Root of every error dashrag raises on purpose."""


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in a config tree, located by its JSON path (``params.children[1].params.top_k``)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True)
class RuleIssue(ConfigIssue):
    """A cross-field rule broken by several values together, reported at the field it concerns."""


class ConfigError(DashragError):
    """A config tree is invalid; ``issues`` holds *every* problem found, each with its path."""

    def __init__(self, issues: Iterable[ConfigIssue] | str):
        if isinstance(issues, str):
            issues = [ConfigIssue("", issues)]
        self.issues: Sequence[ConfigIssue] = tuple(issues)
        super().__init__("; ".join(str(i) for i in self.issues))


class UnknownComponentError(ConfigError):
    """A component name that is not registered (the message suggests close matches)."""


class QueryError(DashragError):
    """A query that cannot be answered as given (empty, wrong type)."""


class QuerySyntaxError(QueryError):
    """A boolean query expression that does not parse; the message names the column."""


class CorpusError(DashragError):
    """A corpus that cannot be read: a missing path, no documents, a bad line."""


class PersistenceError(DashragError):
    """A saved folder that cannot be loaded: missing, corrupted, another corpus, newer format."""


class RetrievalError(DashragError):
    """A retriever could not answer (not initialised, a failing stage)."""


class UnknownChunkError(RetrievalError):
    """``score_chunks`` was asked about chunk ids this retriever does not hold."""


class StageError(RetrievalError):
    """A stage of a multi-stage cascade failed; ``stage`` names it (fast, early_exit, hydrate, precise, mmr)."""

    def __init__(self, stage: str, message: str):
        self.stage = stage
        super().__init__(f"stage {stage!r} failed: {message}")


class RerankerError(StageError):
    """A stage of a rerank cascade failed, as the reference names it: ``stage`` (fast, early_exit,
    hydrate, precise, mmr) and ``context``, a JSON-ready dict of what the stage was working on
    (the query, how many candidates, the component). Never holds a secret."""

    def __init__(self, stage: str, message: str, context: dict | None = None):
        self.context = dict(context or {})
        super().__init__(stage, message)


class LLMError(DashragError):
    """The LLM backend failed or answered something unusable."""


class LLMBackendError(LLMError):
    """The LLM backend did not answer usably: a timeout, a refused connection, an HTTP error, a malformed body.

    One class for every such failure, so the CLI prints one ``error:`` line and a caller
    catches one thing. The message names the endpoint (model and base URL, never the
    key) and the failure; ``kind`` (``timeout``, ``connection``, ``http``,
    ``malformed_answer``) and ``status_code`` (the HTTP status, or ``None``)
    let a caller tell them apart, and the original exception (its litellm class) is
    chained as ``__cause__``. Never retried by dashrag: see docs/agentic.md.
    """

    def __init__(self, endpoint: str, failure: str, kind: str, status_code: int | None = None):
        self.endpoint = endpoint
        self.failure = failure
        self.kind = kind
        self.status_code = status_code
        super().__init__(f"LLM backend {endpoint} failed: {failure}")


class SelectionError(LLMError):
    """Every selection attempt of an LLM reranker was invalid; ``attempts`` says why each failed."""

    def __init__(self, message: str, attempts: Sequence[dict] = ()):
        self.attempts = list(attempts)
        super().__init__(message)


class BatchQueryError(DashragError):
    """A query of a streamed batch failed; every query before it had been answered and handed out.

    ``position`` is 1-based in the batch's order, ``query_id`` the caller's name for the
    query (its position when the caller gave none), ``cause`` the error that stopped it.
    """

    def __init__(self, position: int, total: int, query_id: str, cause: DashragError):
        self.position = position
        self.total = total
        self.query_id = query_id
        self.cause = cause
        done = position - 1
        super().__init__(f"query {query_id!r} ({position} of {total}) failed; the {done} "
                         f"{'answer' if done == 1 else 'answers'} before it were delivered: {cause}")


class CredentialError(DashragError):
    """A referenced credential (environment variable) is not set. Never carries the secret."""


class EngineError(DashragError):
    """An engine (Qdrant, PostgreSQL) is unreachable, refuses the credentials, or holds something other
    than the tree expects. The message names the engine and the object (collection, table), never a secret."""


class FilterError(QueryError):
    """A metadata filter that is malformed or compares values of different types; ``path`` is where in the
    filter (``$.year.$gte``), so the CLI, the service (422) and the page can point at it."""

    def __init__(self, path: str, message: str):
        self.path, self.reason = path, message
        super().__init__(f"filter {path}: {message}")
