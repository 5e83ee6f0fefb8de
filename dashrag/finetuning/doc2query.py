"""doc2query through an LLM the user configured: queries a model writes for a sample of documents.

Optional and never required: the structural pseudo-queries (``pseudo_queries``) need nothing but the
documents; a user who runs an LLM (any litellm model, or an OpenAI-compatible server of their own
through ``LiteLLMModel``'s ``api_base``) can add queries written for a seeded sample of documents.
Each call forces one tool, ``write_search_queries`` (``{"queries": [...]}``), so the answer is data,
not prose to parse. A call that fails or answers out of contract costs that document its queries and
is counted in the result, never the run; the calls stop at the deadline (the pipeline's time budget).
The positive is the document's whole indexed text: the model wrote the query, so no span of the text
is the query to remove.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from dashrag.documents.corpus import full_text
from dashrag.documents.model import SourceDocument
from dashrag.errors import LLMError
from dashrag.finetuning.pseudo_queries import PseudoQuery, informative

DOC2QUERY = "doc2query"
WRITE_QUERIES = "write_search_queries"
PROMPT = ("Write {count} different search queries that a person would type to find the document below. "
          "Use the document's language. Do not copy sentences from it.\n\nDocument:\n{document}")


def doc2query_tool_schema(count: int) -> dict[str, Any]:
    """The one function the model must call: a list of ``count`` query strings."""
    return {"type": "function", "function": {
        "name": WRITE_QUERIES,
        "description": "Return the search queries written for the document.",
        "parameters": {"type": "object", "required": ["queries"], "properties": {
            "queries": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": count}}}}}


def answered_queries(tool_calls: Sequence[dict[str, Any]], count: int) -> list[str]:
    """The queries of a ``write_search_queries`` call (stripped, fragments and repeats dropped, at most
    ``count``); an answer out of contract (no such call, arguments not JSON, not a list of strings) is an
    LLMError saying what was wrong."""
    calls = [c for c in tool_calls if c.get("function", {}).get("name") == WRITE_QUERIES]
    if not calls:
        raise LLMError(f"the model did not call {WRITE_QUERIES}")
    try:
        arguments = json.loads(calls[0]["function"].get("arguments") or "")
    except json.JSONDecodeError as exc:
        raise LLMError(f"{WRITE_QUERIES}'s arguments are not JSON: {exc.msg}") from None
    queries = arguments.get("queries") if isinstance(arguments, dict) else None
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise LLMError(f"{WRITE_QUERIES}'s 'queries' must be a list of strings")
    kept = [q.strip() for q in queries if informative(q.strip())]
    return list(dict.fromkeys(kept))[:count]


@dataclass
class Doc2QueryResult:
    """The queries written, and what happened to the calls (the report's account of the LLM's share)."""

    queries: list[PseudoQuery] = field(default_factory=list)
    asked: int = 0
    failed: list[str] = field(default_factory=list)  # "document id: why"
    stopped_at_deadline: bool = False

    def account(self) -> dict[str, Any]:
        """What the report says of this source: queries written, documents asked, failures, the deadline."""
        return {"source": DOC2QUERY, "queries": len(self.queries), "asked": self.asked,
                "failed": self.failed, "stopped_at_deadline": self.stopped_at_deadline}


def sample(documents: Sequence[SourceDocument], size: int, seed: int) -> list[SourceDocument]:
    """``size`` documents drawn with a seeded generator (all of them when there are fewer), in corpus order."""
    if size >= len(documents):
        return list(documents)
    chosen = set(random.Random(seed).sample(range(len(documents)), size))
    return [d for i, d in enumerate(documents) if i in chosen]


def llm_queries(model: Any, documents: Sequence[SourceDocument], *, sample_size: int, per_document: int = 3,
                seed: int = 42, deadline: float | None = None,
                clock: Callable[[], float] = time.monotonic) -> Doc2QueryResult:
    """Ask ``model`` (a ``LiteLLMModel``) for ``per_document`` queries for each sampled document, one call each,
    until ``deadline`` (a ``clock`` reading; None: no limit)."""
    tool = doc2query_tool_schema(per_document)
    result = Doc2QueryResult()
    for document in sample(documents, sample_size, seed):
        if deadline is not None and clock() >= deadline:
            result.stopped_at_deadline = True
            break
        text = full_text(document)
        result.asked += 1
        try:
            answer = model.call_tool([{"role": "user", "content": PROMPT.format(count=per_document, document=text)}],
                                     tool)
            written = answered_queries(answer.tool_calls, per_document)
        except LLMError as exc:
            result.failed.append(f"{document.id}: {exc}")
            continue
        result.queries.extend(PseudoQuery(q, document.id, DOC2QUERY, text) for q in written)
    return result


@dataclass(frozen=True)
class LLMQueryWriter:
    """The pipeline's doc2query source: the LLM component config, how many documents to ask about, the deadline
    (a ``time.monotonic`` reading). Called with the corpus's documents, it builds the model, asks, closes it."""

    llm: dict[str, Any]
    sample_size: int
    seed: int
    deadline: float | None
    per_document: int = 3

    def __call__(self, documents: Sequence[SourceDocument]) -> Doc2QueryResult:
        from dashrag.core.factory import build_as
        from dashrag.llm.litellm_model import LiteLLMModel

        model = build_as(self.llm, LiteLLMModel, "llm")
        try:
            return llm_queries(model, documents, sample_size=self.sample_size, per_document=self.per_document,
                               seed=self.seed, deadline=self.deadline)
        finally:
            model.close()


__all__ = ["DOC2QUERY", "Doc2QueryResult", "LLMQueryWriter", "answered_queries", "doc2query_tool_schema",
           "llm_queries", "sample"]
