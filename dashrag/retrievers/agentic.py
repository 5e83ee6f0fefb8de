"""AgenticRerankerRetriever: an LLM selects the best ``top_k`` of a child's ``k1`` candidates.

The behaviour, clause by clause (docs/agentic.md has the whole contract):

* The child is asked for ``k1`` candidates (``top_k=k1`` as its retrieval-size hint;
  a ``top_k`` hint from *this* node's parent is ignored: k1 and top_k stay as
  configured). Its answer is deduplicated by chunk id (first occurrence kept) and
  capped to ``k1``.
* When the candidates already fit ``top_k`` the model is skipped and they are
  returned unchanged. Otherwise the model sees them numbered (one JSON-quoted line
  each, :mod:`dashrag.llm.candidates`) and must call ``select_best_chunks`` with up
  to ``top_k`` distinct 1-based numbers (:mod:`dashrag.llm.selection`).
* An invalid answer is retried with a message saying exactly what was wrong, up to
  ``function_call_max_trials`` attempts in all, the reason sent the way the model's
  ``retry_feedback`` says (a ``tool`` or a ``user`` message). Backend failures
  (timeouts, refused connections, HTTP errors, malformed bodies) propagate as one
  :class:`~dashrag.errors.LLMBackendError`, never retried here. Exhausted trials
  raise :class:`~dashrag.errors.SelectionError` carrying every attempt, or, with
  ``fallback_to_child_order``, return the child's first ``top_k`` and say so.
* With ``window_size`` set and more candidates than that, the model judges a
  sliding window (``window_size`` candidates, moving ``window_stride``) from the end
  of the list to its start, as listwise rerankers do (:mod:`dashrag.llm.sliding_window`).
* A selected chunk keeps its chunk and text; its score is ``1 / rank`` in the
  model's order (the model gives an order, not a strength) and its provenance
  holds the child's rank and score.
* ``enable_retrieve_then_expand`` widens each returned chunk with its neighbours
  (``expand_window`` chunks in all; :mod:`dashrag.documents.windows`) after the
  selection, or after the skip: expansion shapes what is returned, whichever way
  it was chosen.

The trace node's ``children`` holds the child's node; its ``selection`` is a
JSON-ready summary of the decision: the candidates, every attempt (raw answer,
verdict, latency, usage, cost), the chosen numbers, whether the model was skipped,
whether the fallback was used, and the expansion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from pydantic import Field

from dashrag.core.ask import Ask
from dashrag.core.params import (
    ComponentParams,
    ComponentSpec,
    Rule,
    component_field,
    components_field,
    less_or_equal,
    spec,
    top_k_field,
)
from dashrag.core.registry import register
from dashrag.core.retriever import Answer, Result, SingleChildRetriever
from dashrag.documents.model import ScoredChunk
from dashrag.errors import SelectionError
from dashrag.llm.litellm_model import LiteLLMModel
from dashrag.llm.prompt import SelectionPrompt
from dashrag.llm.selection import SelectionVerdict, follow_up_messages, selection_tool_schema, validate_selection
from dashrag.llm.sliding_window import sliding_window_select
from dashrag.llm.tool_call import ToolCallResult

# The reference's default child: BM25 with cosine-normalised scores (its one difference from BM25's
# own defaults) beside the dense retriever, interleaved round robin. Every other parameter is the
# component's own default, so the two cannot drift apart.
DEFAULT_CHILD = spec("ParallelRetriever", merge_strategy="round_robin",
                     children=[spec("BM25Retriever", similarity_function="cosine"), spec("DenseEmbeddingRetriever")])


def _window_problem(p: AgenticParams) -> str | None:
    if p.window_size is None:
        return None
    stride = p.window_stride if p.window_stride is not None else p.window_size - p.top_k
    if stride < 1:
        return f"window_size ({p.window_size}) must exceed top_k ({p.top_k}) for the window to slide"
    if p.top_k + stride > p.window_size:
        return (f"top_k ({p.top_k}) + window_stride ({stride}) must be <= window_size ({p.window_size}), "
                "so each window's choice is judged again in the next")
    return None


SLIDING_WINDOW_RULE = Rule("sliding_window", ("top_k", "window_stride", "window_size"),
                           "with window_size set: top_k + window_stride <= window_size "
                           "(window_stride defaults to window_size - top_k)", _window_problem)


class AgenticParams(ComponentParams):
    enable_retrieve_then_expand: bool = Field(False, description=(
        "Widen each returned chunk with its neighbouring chunks of the same document."))
    expand_window: int = Field(3, ge=1, le=100, description=(
        "Chunks per expanded window, the retrieved one included: odd sizes are centred on it, even sizes "
        "keep the extra chunk after it; windows stay inside the document and overlapping ones merge."))
    children: list[ComponentSpec] = components_field(
        "retriever", [DEFAULT_CHILD], min_length=1, max_length=1,
        description="The one retriever that supplies the candidates (fixed after construction).")
    k1: int = Field(10, ge=1, le=10_000, description="How many candidates to fetch from the child.")
    top_k: int = top_k_field(5, "How many chunks the model selects at most; at most k1.")
    function_call_max_trials: int = Field(3, ge=1, le=10, description=(
        "Selection attempts, the first included: an invalid answer is retried with what was wrong."))
    fallback_to_child_order: bool = Field(False, description=(
        "When every trial is invalid, return the child's first top_k (said in the trace) instead of raising."))
    window_size: int | None = Field(None, ge=2, le=1_000, description=(
        "Most candidates one call may show (the context budget); more are judged by a sliding window. "
        "None: every candidate in one call."))
    window_stride: int | None = Field(None, ge=1, le=1_000, description=(
        "Candidates the sliding window moves per step (default window_size - top_k)."))
    prompt: ComponentSpec = component_field("prompt", spec("SelectionPrompt"),
                                            description="The messages that ask the model to select.")
    llm_model: ComponentSpec = component_field("llm", spec("LiteLLMModel"),
                                               description="The function-calling model that selects.")

    RULES = (less_or_equal("top_k", "k1"), SLIDING_WINDOW_RULE)


@dataclass
class SelectionRecord:
    """What one query's selection did, kept JSON-ready for the trace's ``selection``."""

    received: int
    candidates: list[ScoredChunk]
    top_k: int
    model_skipped: bool = False
    attempts: list[dict[str, Any]] = field(default_factory=list)
    windows: list[list[int]] | None = None
    chosen: list[int] = field(default_factory=list)
    fallback_reason: str | None = None
    expansion: dict[str, Any] | None = None
    llm: dict[str, str] = field(default_factory=dict)  # the model asked: {component, model} (OpenTelemetry's LLM spans)

    def attempt(self, window: int, trial: int, shown: list[int], answer: ToolCallResult,
                verdict: SelectionVerdict) -> None:
        self.attempts.append({
            "window": window, "trial": trial,
            # the candidates this call showed, by their number in the whole list: the model's number j is shown[j-1]
            "shown": [i + 1 for i in shown],
            "raw_answer": {"tool_calls": answer.tool_calls, "content": answer.content},
            "verdict": verdict.to_json(),
            "latency_ms": round(answer.latency_ms, 3),
            "usage": dict(answer.usage),
            "cost": answer.cost,
        })

    def to_json(self) -> dict[str, Any]:
        usage: dict[str, int] = {}
        for a in self.attempts:
            for name, value in a["usage"].items():
                usage[name] = usage.get(name, 0) + value
        costs = [a["cost"] for a in self.attempts]
        n = len(self.candidates)
        if self.model_skipped:
            summary = f"model skipped: {n} candidate(s) fit top_k={self.top_k}"
        elif self.fallback_reason is not None:
            summary = f"fallback to the child's order after {len(self.attempts)} invalid answer(s)"
        else:
            summary = f"LLM selected {len(self.chosen)} of {n} candidates in {len(self.attempts)} call(s)"
        return {
            "summary": summary,
            "received": self.received,
            "candidates": n,
            "candidate_ids": [c.id for c in self.candidates],
            "model_skipped": self.model_skipped,
            "attempts": self.attempts,
            "windows": None if self.windows is None else [[i + 1 for i in w] for w in self.windows],
            "chosen_indices": [i + 1 for i in self.chosen] if not self.model_skipped else list(range(1, n + 1)),
            "chosen_ids": [self.candidates[i].id for i in self.chosen] if not self.model_skipped
                          else [c.id for c in self.candidates],
            "fallback_used": self.fallback_reason is not None,
            "fallback_reason": self.fallback_reason,
            "expansion": {"applied": self.expansion is not None, **(self.expansion or {})},
            "llm": self.llm,
            "llm_calls": len(self.attempts),
            "llm_ms": round(sum(a["latency_ms"] for a in self.attempts), 3),
            "usage": usage,
            "cost": None if not costs or any(c is None for c in costs) else sum(costs),
        }


def dedupe_and_cap(chunks: Sequence[ScoredChunk], k1: int) -> list[ScoredChunk]:
    """First occurrence of each chunk id, in order, at most ``k1``."""
    seen: set[int] = set()
    kept: list[ScoredChunk] = []
    for chunk in chunks:
        if chunk.id not in seen and len(kept) < k1:
            seen.add(chunk.id)
            kept.append(chunk)
    return kept


@register(
    kind="retriever",
    icon="Sparkles",
    category="rerank",
    en=("Agentic LLM reranker", "An LLM selects the best of a retriever's candidates through a function call."),
    es=(
        "Reordenador agéntico con LLM",
        "Un LLM elige los mejores candidatos de un recuperador mediante una llamada a función.",
    ),
    representation={"en": "LLM selects top {top_k} of {k1}", "es": "El LLM elige {top_k} de {k1}"},
    operation="Asks the child for k1 candidates and lets the LLM select up to top_k of them, best first.",
)
class AgenticRerankerRetriever(SingleChildRetriever[AgenticParams]):
    stream_block = 1  # an LLM call per query (seconds each): a streamed batch hands out every answer as it is made

    @property
    def llm(self) -> LiteLLMModel:
        return self.nested["llm_model"]

    @property
    def prompt(self) -> SelectionPrompt:
        return self.nested["prompt"]

    def close(self) -> None:
        """Release the LLM first (no call can start once the child is gone), then the child, then the prompt."""
        self._close()
        self.llm.close()
        self.child.close()
        self.prompt.close()

    # -- retrieval ---------------------------------------------------------------------
    def fetch_size(self, ask: Ask) -> int:
        return self.params.k1  # a parent's top_k hint is replaced, never passed on

    def _rescore(self, queries: list[str], answers: Sequence[Answer], ask: Ask) -> list[Result]:
        return [self._decide(q, chunks, node) for q, (chunks, node) in zip(queries, answers)]

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """The child's distances: the model selects, it does not score arbitrary chunks."""
        return self.child.score_chunks(chunk_ids, query)

    def _decide(self, query: str, received: Sequence[ScoredChunk], child_node: dict) -> Result:
        p = self.params
        candidates = dedupe_and_cap(received, p.k1)
        record = SelectionRecord(received=len(received), candidates=candidates, top_k=p.top_k,
                                 llm={"component": self.llm.component_name, "model": self.llm.params.model})
        if len(candidates) <= p.top_k:
            chosen = list(candidates)
            record.model_skipped = True
        else:
            try:
                record.chosen = self._choose(query, candidates, record)
                chosen = [self._ranked(candidates[i], i, rank) for rank, i in enumerate(record.chosen, start=1)]
            except SelectionError as exc:
                if not p.fallback_to_child_order:
                    raise SelectionError(str(exc), record.attempts) from None
                record.chosen, record.fallback_reason = list(range(p.top_k)), str(exc)
                chosen = candidates[: p.top_k]  # the child's order, unchanged
        if p.enable_retrieve_then_expand and chosen:
            expanded = self.merge_expanded_chunks(self.expand_retrieved_chunks(chosen, p.expand_window))
            record.expansion = {
                "window": p.expand_window,
                "chunks_in": len(chosen),
                "chunks_out": len(expanded),
                "merged_ids": [c.provenance["window"]["chunk_ids"] for c in expanded],
            }
            chosen = expanded
        return chosen, [child_node], record.to_json()

    def _ranked(self, chunk: ScoredChunk, child_index: int, rank: int) -> ScoredChunk:
        return chunk.rescored(
            1.0 / rank, self.component_name, llm_rank=rank, child_rank=child_index + 1, child_score=chunk.score
        )

    def _choose(self, query: str, candidates: list[ScoredChunk], record: SelectionRecord) -> list[int]:
        """Indices into ``candidates`` the model chose, best first (one call, or a sliding window)."""
        p = self.params
        n = len(candidates)
        if p.window_size is None or n <= p.window_size:
            return self._select_once(query, candidates, list(range(n)), record, window=0)
        stride = p.window_stride if p.window_stride is not None else p.window_size - p.top_k
        calls = iter(range(n))

        def select(current: Sequence[int]) -> list[int]:
            return self._select_once(query, candidates, list(current), record, window=next(calls))

        result = sliding_window_select(n, p.window_size, stride, p.top_k, select)
        record.windows = [list(w) for w in result.windows]
        return list(result.selected)

    def _select_once(
        self, query: str, candidates: list[ScoredChunk], shown: list[int], record: SelectionRecord, window: int
    ) -> list[int]:
        """One validated selection among ``candidates[i] for i in shown``; returns chosen ``shown`` entries."""
        p = self.params
        n, k = len(shown), p.top_k
        tool = selection_tool_schema(n, k)
        messages = self.prompt.render(query, [candidates[i].chunk.text for i in shown], k)
        problems: list[str] = []
        for trial in range(1, p.function_call_max_trials + 1):
            answer = self.llm.call_tool(messages, tool)
            verdict = validate_selection(answer.tool_calls, n, k)
            record.attempt(window, trial, shown, answer, verdict)
            if verdict.accepted:
                return [shown[i] for i in verdict.indices or ()]
            problems.append(f"trial {trial}: {verdict.problem}")
            messages = messages + follow_up_messages(
                answer.tool_calls, answer.content, verdict.problem or "", n, k, feedback=self.llm.feedback_mode
            )
        raise SelectionError(
            f"{self.component_name}: no valid selection in {p.function_call_max_trials} "
            f"trial(s) ({'; '.join(problems)})",
            record.attempts,
        )
