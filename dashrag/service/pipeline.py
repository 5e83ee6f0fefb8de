"""``POST /retrieve``: the reference pipeline, step by step, each step a small function of its own module.

validate (the request model) → collections → rewrite → complexity (of the original
query) → search every collection concurrently → merge and sort → retrieval floor →
rerank → confidence filter → pack into the budget, citations, low_confidence.

A step that fails (search, rerank) raises :class:`StepFailure` naming the step; the app
answers 503 with that name and a message fit to show (a DashragError's own message,
which never carries a secret, or only the exception's class otherwise).

Every step is timed on every request, trace or not: the route sends the times as a
``Server-Timing`` header, so a browser's developer tools, a proxy or a benchmark can tell
the collections' search from what the service adds around it.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from dashrag.core.restriction import Restriction
from dashrag.errors import DashragError, FilterError
from dashrag.service import citations as cite
from dashrag.service import complexity, gates, packing
from dashrag.service.collections import Collection, CollectionRegistry, RetrievedChunk
from dashrag.service.models import CitedPlace, ContextChunk, RetrieveRequest, RetrieveResponse, TraceNode
from dashrag.service.rerank import TextReranker
from dashrag.service.rewrite import QueryRewriter, RewriteOutcome


def filter_warnings(found: list[Collection], restriction: Restriction | None) -> list[str]:
    """The filter's fields no document has, per collection searched (named when there are several): an optional
    capability, like ``search_traced``; a collection that cannot list its fields (an external engine's) adds none."""
    named = len(found) > 1
    return [f"collection {c.name!r}: {w}" if named else w for c in found
            for w in getattr(c, "filter_warnings", lambda _: [])(restriction)]


class StepFailure(Exception):
    def __init__(self, step: str, message: str):
        self.step = step
        super().__init__(f"{step}: {message}")


class NoCollection(Exception):
    pass


def safe_message(exc: BaseException) -> str:
    """What may be shown of an exception: a DashragError's message (written for users, secrets masked),
    else only its class name (a library's message may hold anything)."""
    return str(exc) if isinstance(exc, DashragError) else f"{type(exc).__name__} (details in the server log)"


@dataclass(frozen=True)
class Thresholds:
    floor: float
    confidence: float
    budgets: dict[str, int]


@dataclass
class PipelineResult:
    """The answer, and each step's wall time in ms in the order the steps ran (``total``: the whole run)."""

    response: RetrieveResponse
    step_ms: dict[str, float]


def ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def step_node(component: str, query: str, elapsed_ms: float, output: Sequence[Any] = (),
              children: Sequence[dict] = (), **selection: Any) -> dict[str, Any]:
    """A trace node of the project's shape for one pipeline step."""
    node: dict[str, Any] = {"component": component, "params": {}, "query": query, "elapsed_ms": elapsed_ms,
                            "output": [o if isinstance(o, dict) else _chunk_json(o) for o in output],
                            "children": list(children)}
    if selection:
        node["selection"] = selection
    return node


def _chunk_json(chunk: RetrievedChunk | ContextChunk) -> dict[str, Any]:
    data = chunk.model_dump() if isinstance(chunk, ContextChunk) else dict(vars(chunk))
    data.pop("text", None)
    return data


class RetrievePipeline:
    def __init__(self, registry: CollectionRegistry, thresholds: Thresholds, rewriter: QueryRewriter | None,
                 reranker: TextReranker | None, executor: ThreadPoolExecutor):
        self.registry = registry
        self.thresholds = thresholds
        self.rewriter = rewriter
        self.reranker = reranker
        self.executor = executor

    def run(self, request: RetrieveRequest) -> PipelineResult:
        started = time.perf_counter()
        nodes: list[dict[str, Any]] = []
        step_ms: dict[str, float] = {}

        def note(component: str, query: str, step_started: float, *args: Any, **kwargs: Any) -> None:
            step_ms[component] = ms_since(step_started)
            if request.trace:  # trace nodes are built only when asked for
                nodes.append(step_node(component, query, step_ms[component], *args, **kwargs))

        names = [request.collection_name] + ([request.user_collection_name] if request.user_collection_name else [])
        found = [c for c in (self.registry.get(n) for n in dict.fromkeys(names)) if c is not None]
        if not found:
            raise NoCollection(f"no collection named {' or '.join(map(repr, dict.fromkeys(names)))}")

        # the filter is parsed here, in the request's worker thread, not by the body's validation on the event
        # loop (a 10,000-value $in takes milliseconds of CPU, issue 38); and before the rewrite, so a bad one
        # costs no call to the LLM
        restriction = None if request.filters is None else Restriction.where(request.filters)
        t = time.perf_counter()
        rewrite = self._rewrite(request.query)
        note("rewrite", request.query, t, status=rewrite.status, used_query=rewrite.query, detail=rewrite.detail)
        t = time.perf_counter()
        level = complexity.classify(request.query)
        budget = complexity.token_budget(level, self.thresholds.budgets)
        note("complexity", request.query, t, complexity=level, token_budget=budget)

        t = time.perf_counter()
        searched = self._search(found, rewrite.query, request.limit, request.trace, restriction)
        merged = gates.sort_by([c for chunks, _ in searched for c in chunks], lambda c: c.retrieval_score)
        note("search", rewrite.query, t, merged, [n for _, n in searched if n], collections=[c.name for c in found],
             **({} if request.filters is None else {"filters": request.filters}))  # the filter asked, on record

        t = time.perf_counter()
        survivors = gates.at_least(merged, lambda c: c.retrieval_score, self.thresholds.floor)
        note("retrieval_floor", rewrite.query, t, survivors, floor=self.thresholds.floor,
             dropped=len(merged) - len(survivors))

        t = time.perf_counter()
        reranked = self._rerank(rewrite.query, survivors)
        note("rerank", rewrite.query, t, reranked, reranker=self.reranker_name)

        t = time.perf_counter()
        confident = gates.at_least(reranked, lambda c: c.rerank_score, self.thresholds.confidence)
        note("confidence", rewrite.query, t, confident, threshold=self.thresholds.confidence,
             dropped=len(reranked) - len(confident))

        t = time.perf_counter()
        budget_chars = packing.char_budget(budget)
        kept = packing.pack(confident, budget_chars, lambda c: c.text)
        sources = cite.citations(c.source_id for c in kept)
        places = cite.cited_places((c.source_id, c.metadata) for c in kept)
        note("assemble", request.query, t, kept, budget_chars=budget_chars,
             packed_chars=sum(len(c.text) for c in kept), citations=sources)
        step_ms["total"] = ms_since(started)
        trace = step_node("retrieve", request.query, step_ms["total"], kept, nodes) if request.trace else None
        response = RetrieveResponse(context_chunks=kept, citations=sources,
                                    cited_places=[CitedPlace.model_validate(p) for p in places],
                                    low_confidence=cite.low_confidence(kept),
                                    reranker=self.reranker_name,
                                    trace=None if trace is None else TraceNode.model_validate(trace),
                                    empty_reason=None if kept else self._empty_reason(merged, reranked, confident),
                                    warnings=filter_warnings(found, restriction))
        return PipelineResult(response, step_ms)

    def _empty_reason(self, merged: list[RetrievedChunk], reranked: list[ContextChunk],
                      confident: list[ContextChunk]) -> str:
        """Why nothing was kept, without a trace: no chunk found, or the gate that dropped them all and the best
        score it saw (so a user can tell a floor set too high from a query the corpus does not answer)."""
        if not merged:
            return "the collections returned no chunks for this query"
        if not reranked:
            best = max(gates.score_or_zero(c.retrieval_score) for c in merged)
            return (f"all {len(merged)} chunks fell under the retrieval floor {self.thresholds.floor:g} "
                    f"(RAG_RETRIEVAL_SCORE_FLOOR); the best retrieval_score was {best:.4g}")
        if not confident:
            best = max(gates.score_or_zero(c.rerank_score) for c in reranked)
            return (f"all {len(reranked)} chunks fell under the confidence threshold {self.thresholds.confidence:g} "
                    f"(RAG_CONFIDENCE_THRESHOLD); the best rerank_score was {best:.4g}")
        return "every chunk that passed the gates has empty text"

    @property
    def reranker_name(self) -> str:
        return self.reranker.name if self.reranker is not None else "none"

    def _rewrite(self, query: str) -> RewriteOutcome:
        if self.rewriter is None:
            return RewriteOutcome(query, "off")
        return self.rewriter.rewrite(query)

    def _search(self, found: list[Collection], query: str, limit: int, trace: bool,
                restriction: Restriction | None) -> list[tuple[list[RetrievedChunk], dict | None]]:
        def one(collection: Collection) -> tuple[list[RetrievedChunk], dict | None]:
            t = time.perf_counter()
            try:
                traced: Callable | None = getattr(collection, "search_traced", None)
                chunks, tree = traced(query, limit, restriction) if traced else \
                    (collection.search(query, limit, restriction), None)
            except FilterError:
                raise  # the request's filter does not fit this corpus: a 422 naming the path, not a failed step
            except Exception as exc:
                raise StepFailure("search", f"collection {collection.name!r}: {safe_message(exc)}") from exc
            return chunks, step_node(f"search:{collection.name}", query, ms_since(t), chunks, [tree] if tree else []) \
                if trace else None

        if len(found) == 1:
            return [one(found[0])]
        return list(self.executor.map(one, found))

    def _rerank(self, query: str, chunks: list[RetrievedChunk]) -> list[ContextChunk]:
        if self.reranker is None or not chunks:
            scores = [c.retrieval_score for c in chunks]
        else:
            try:
                scores = list(self.reranker.score(query, [c.text for c in chunks]))
            except Exception as exc:
                raise StepFailure("rerank", f"{self.reranker.name}: {safe_message(exc)}") from exc
        ranked = [ContextChunk(**vars(c), rerank_score=s) for c, s in zip(chunks, scores)]  # vars: asdict deep-copies
        return gates.sort_by(ranked, lambda c: c.rerank_score)
