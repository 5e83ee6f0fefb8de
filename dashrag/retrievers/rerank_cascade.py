"""RerankCascadeRetriever: a cheap stage, an early-exit rule, an expensive stage, optional MMR.

The two-stage rerank of the seeds' rag-reranker. The ``fast`` retriever narrows
the corpus to ``stage1_top_n`` candidates (50, as the reference). When the
first-stage ranking is already decisive (its top score clears a threshold, or leads
the runner-up by a relative margin) the expensive ``precise`` stage is skipped and
the first-stage scores are kept: that is the early exit, and the trace says which
path ran and why. Otherwise the best ``stage2_top_n`` candidates (None: all) are
hydrated (their chunks looked up) and re-scored by ``precise`` through
``score_chunks``, so any retriever (a cross-encoder, a dense model) can be the
precise stage; the candidates it did not score keep their first-stage order after
them. With MMR on (``enable_mmr``, or ``mmr_lambda`` given; λ 0.7 by default, as the
reference), a final MMR stage re-orders the precise stage's output, with the precise
stage's scores as relevance (:func:`dashrag.retrievers.mmr.cosine_mmr`): it picks among the
candidates the precise stage scored (the others' scores are on the fast stage's scale, so they
follow, in their order, when ``top_k`` asks for more); it keeps the scores and runs only with
more than one candidate.

A failure inside any stage raises :class:`~dashrag.errors.RerankerError` (a
``StageError``) naming the stage (``fast``, ``early_exit``, ``hydrate``,
``precise``, ``mmr``) with a context dict, so an operator knows which model or
index to look at.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator, Literal, Sequence

from pydantic import Field

from dashrag.core.ask import Ask
from dashrag.core.params import ComponentParams, ComponentSpec, Rule, component_field, less_or_equal, spec, top_k_field
from dashrag.core.registry import register
from dashrag.core.retriever import CompositeRetriever, Result
from dashrag.documents.model import ScoredChunk
from dashrag.errors import RerankerError, StageError
from dashrag.retrievers.mmr import cosine_mmr, reorder

STAGES = ("fast", "early_exit", "hydrate", "precise", "mmr")


def should_exit_early(scores: Sequence[float], mode: str, margin: float, threshold: float | None) -> tuple[bool, str]:
    """The early-exit rule over first-stage scores (best first): (exit?, why)."""
    if mode == "never" or not scores:
        return False, "early exit disabled" if mode == "never" else "no candidates"
    top = scores[0]
    if mode == "threshold":
        assert threshold is not None
        return (top >= threshold, f"top score {top:.4g} {'>=' if top >= threshold else '<'} threshold {threshold:.4g}")
    if len(scores) == 1:
        return True, "a single candidate"
    gap = (top - scores[1]) / abs(top) if top else 0.0
    return (gap >= margin, f"top leads runner-up by {gap:.1%} ({'>=' if gap >= margin else '<'} margin {margin:.1%})")


def _threshold_given(params: RerankCascadeParams) -> str | None:
    if params.early_exit == "threshold" and params.exit_threshold is None:
        return "early_exit 'threshold' needs exit_threshold"
    return None


class RerankCascadeParams(ComponentParams):
    fast: ComponentSpec = component_field("retriever", spec("BM25Retriever", top_k=50),
                                          description="The cheap first stage that proposes candidates.")
    precise: ComponentSpec = component_field(
        "retriever",
        spec("DenseEmbeddingRetriever", top_k=10),
        description="The expensive stage that re-scores the candidates (via score_chunks).",
    )
    stage1_top_n: int = Field(50, ge=1, le=10_000, description="How many candidates the fast stage passes on.")
    stage2_top_n: int | None = Field(10, ge=1, le=10_000, description=(
        "How many of the stage-1 candidates (best first) the precise stage scores (the rag-reranker's default, "
        "10, cut to what stage 1 passes on); the rest keep their first-stage order after them. None: all of them."))
    top_k: int = top_k_field(10)
    early_exit: Literal["never", "margin", "threshold"] = Field(
        "never", description="When to skip the precise stage: never, on a decisive margin, or above a score threshold."
    )
    exit_margin: float = Field(
        0.5, ge=0, description="Relative lead of the top first-stage score over the runner-up that counts as decisive."
    )
    exit_threshold: float | None = Field(
        None, description="First-stage score at or above which the top is decisive (threshold mode)."
    )
    enable_mmr: bool = Field(False, description=(
        "Re-order the precise stage's output with MMR (also on when mmr_lambda is given)."))
    mmr_lambda: float | None = Field(None, ge=0, le=1, description=(
        "MMR's λ (1: relevance only, 0: diversity only); giving it turns MMR on; None: 0.7 when MMR is on."))
    mmr_embedding: ComponentSpec = component_field("embedding", spec("MiniLMEmbedding"),
                                                   description="Embeds the survivors for the MMR stage.")

    RULES = (
        less_or_equal("top_k", "stage1_top_n"),
        Rule(
            "requires",
            ("early_exit", "exit_threshold"),
            "threshold mode needs exit_threshold",
            _threshold_given,
            json_schema={
                "if": {"required": ["early_exit"], "properties": {"early_exit": {"const": "threshold"}}},
                "then": {"required": ["exit_threshold"], "properties": {"exit_threshold": {"type": "number"}}},
            },
            at="exit_threshold",
        ),
    )


DEFAULT_MMR_LAMBDA = 0.7  # the reference's λ


@contextmanager
def stage(name: str, timings: dict[str, float], context: dict[str, Any] | None = None) -> Iterator[None]:
    """Time a stage and turn any failure inside it into a RerankerError naming it, with ``context``."""
    start = time.perf_counter()
    try:
        yield
    except StageError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure is reported with its stage
        raise RerankerError(name, f"{type(exc).__name__}: {exc}", {**(context or {}), "stage": name,
                                                                   "error_type": type(exc).__name__}) from exc
    finally:
        timings[name] = round((time.perf_counter() - start) * 1000, 3)


@register(
    kind="retriever",
    icon="Layers",
    category="rerank",
    en=("Rerank cascade", "A cheap stage narrows, an expensive stage re-scores unless the first is decisive."),
    es=(
        "Cascada de reordenación",
        "Una etapa barata filtra y otra costosa re-puntúa salvo que la primera sea concluyente.",
    ),
    representation={
        "en": "{fast} → {precise} (top {stage1_top_n} → {top_k}, early exit {early_exit})",
        "es": "{fast} → {precise} (mejores {stage1_top_n} → {top_k}, salida anticipada {early_exit})",
    },
    operation="Retrieves stage1_top_n with fast, exits early when decisive, "
    "else re-scores with precise, optionally MMR.",
)
class RerankCascadeRetriever(CompositeRetriever[RerankCascadeParams]):
    @property
    def mmr_lambda(self) -> float | None:
        """λ of the MMR stage, or None when MMR is off."""
        p = self.params
        if p.mmr_lambda is not None:
            return float(p.mmr_lambda)
        return DEFAULT_MMR_LAMBDA if p.enable_mmr else None

    def _retrieve(self, query: str, ask: Ask) -> Result:
        p = self.params
        k = self.top_k(ask)
        timings: dict[str, float] = {}
        context: dict[str, Any] = {"component": self.component_name, "query": query}
        with stage("fast", timings, {**context, "retriever": self.nested["fast"].component_name}):
            candidates, fast_node = self.nested["fast"].answer(query, ask.with_top_k(p.stage1_top_n))
        context["candidates"] = len(candidates)
        nodes = [fast_node]
        with stage("early_exit", timings, {**context, "rule": p.early_exit}):
            scores = [c.score for c in candidates]
            exit_now, why = should_exit_early(scores, p.early_exit, p.exit_margin, p.exit_threshold)
        mmr = self.mmr_lambda
        record: dict[str, Any] = {}
        if exit_now:
            chosen = candidates[:k]
        else:
            scored_n = len(candidates) if p.stage2_top_n is None else min(p.stage2_top_n, len(candidates))
            with stage("hydrate", timings, context):
                chunks = self.require_infra().chunks
                hydrated = chunks.chunks_at(chunks.rows_of([c.id for c in candidates[:scored_n]]).tolist())
                by_id = {c.id: ScoredChunk(chunk, c.score, c.source, c.provenance)
                         for c, chunk in zip(candidates[:scored_n], hydrated)}
            precise = self.nested["precise"]
            with stage("precise", timings, {**context, "retriever": precise.component_name, "scored": scored_n}):
                start = time.perf_counter()
                ranked = precise.score_chunks(list(by_id), query)
                chosen = [by_id[cid].rescored(-dist, precise.component_name, fast_score=by_id[cid].score,
                                              precise_distance=dist) for cid, dist in ranked]
                elapsed = (time.perf_counter() - start) * 1000
                nodes.append(precise._node(query, chosen, elapsed, [], None, rescored=True))
            chosen += [c.rescored(c.score, c.source, precise_scored=False) for c in candidates[scored_n:]]
            record["precise_scored"] = scored_n
            if mmr is not None:  # over the precise stage's scores only: the rest are on the fast stage's scale
                picked, record["mmr"] = self._mmr(chosen[:scored_n], k, mmr, timings, context)
                chosen = (picked + chosen[scored_n:])[:k]
            else:
                chosen = chosen[:k]
        path = "early_exit" if exit_now else ("precise+mmr" if mmr is not None else "precise")
        selection = {"path": path, "reason": why, "candidates": len(candidates), "returned": len(chosen),
                     "stage_ms": timings, "summary": f"{path}: {why}", **record}
        return chosen, nodes, selection

    def _mmr(self, chosen: list[ScoredChunk], k: int, lam: float, timings: dict[str, float],
             context: dict[str, Any]) -> tuple[list[ScoredChunk], dict[str, Any]]:
        """MMR over the precise stage's output: relevance = the precise scores; scores are kept."""
        with stage("mmr", timings, {**context, "lambda": lam}):
            if len(chosen) <= 1:
                return chosen[:k], {"ran": False, "lambda": lam, "why": f"{len(chosen)} candidate(s)"}
            vectors = self.nested["mmr_embedding"].embed_documents([c.chunk.text for c in chosen])
            picks = cosine_mmr([c.score for c in chosen], vectors, k, lam)  # relevance: the precise stage's scores
            order = [{"chunk_id": chosen[pk.index].id, "mmr": pk.score, "relevance": pk.relevance,
                      "max_similarity": pk.max_similarity} for pk in picks]
            return reorder(chosen, picks, self.component_name), {"ran": True, "lambda": lam, "order": order}

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """The precise stage's distances: it is the cascade's judgement of a chunk."""
        return self.nested["precise"].score_chunks(chunk_ids, query)
