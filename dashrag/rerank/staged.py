"""StagedRerankPipeline: a two-model cascade over candidates the caller already has, as component configs.

What ``dashrag rerank-candidates`` runs (docs/reranking.md). It was called ``RerankPipeline`` before the
rag-reranker's own ``RerankPipeline`` (one reranker with a fast and a precise stage, a hydrator;
:mod:`dashrag.rerank.pipeline`) took that name.

The rerank cascade (:class:`~dashrag.retrievers.rerank_cascade.RerankCascadeRetriever`) reranks what
its own fast retriever finds in a corpus; this is the same cascade for a list of candidates that
came from elsewhere (``dashrag rerank``, the reference's ``ragctl rerank``), built from the cascade's
own parts: its early-exit rule (:func:`should_exit_early`), its stage timing and stage errors
(:func:`stage`: a failure is a ``RerankerError`` naming the stage), its λ (0.7) and its MMR
(:func:`~dashrag.retrievers.mmr.cosine_mmr` over :func:`~dashrag.retrievers.mmr.mmr_select`).

1. **input**: the candidates by their given score, best first (a candidate without one counts as
   0.0; ties and a list without scores keep the given order);
2. **stage 1** (optional; any text reranker: a cross-encoder, an HTTP, Cohere or Jina reranker)
   scores every candidate; the best ``stage1_top_n`` (50) go on;
3. **early exit** (``early_exit``: ``never`` by default, ``margin``, ``threshold``) on the scores so
   far: when decisive, stage 2 and MMR are skipped;
4. **stage 2** (optional, the precise reranker) scores the best ``stage2_top_n`` (10) of them; the
   rest keep their order after them;
5. **MMR** (optional, :class:`StagedMMR`: λ 0.7, candidates embedded with its ``embedding``) picks
   ``top_k`` among the candidates the last stage scored, with its scores as relevance (the others'
   are on another scale; they follow in their order), re-ordering without re-scoring; without MMR
   the first ``top_k`` (10) are returned.

A stage's model is loaded once and reused by every request (:meth:`StagedRerankPipeline.rerank_all`);
:meth:`StagedRerankPipeline.arerank` is the async form (the work runs in a worker thread, so an event
loop keeps serving).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, Sequence, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_component
from dashrag.errors import ConfigError, RerankerError
from dashrag.rerank.candidates import (
    Candidate,
    RankedCandidate,
    RerankRequest,
    RerankResult,
    read_requests,
    request_from,
)
from dashrag.retrievers.mmr import cosine_mmr
from dashrag.retrievers.rerank_cascade import DEFAULT_MMR_LAMBDA, should_exit_early, stage

STAGE_ROLES = {"stage1": "fast", "stage2": "precise"}


@runtime_checkable
class TextReranker(Protocol):
    """What a stage is: a component that scores texts for a query, higher is better, in text order."""

    component_name: str

    def rerank_texts(self, query: str, texts: Sequence[str]) -> list[float]: ...


def _config_error(exc: ValidationError, where: str = "") -> ConfigError:
    return ConfigError("; ".join(f"{where}{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))


class StagedMMR(BaseModel):
    """The MMR stage: λ (1: relevance only, 0: diversity only) and the embedding the candidates are compared by."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def __init__(self, lambda_mult: float = DEFAULT_MMR_LAMBDA, embedding: dict[str, Any] | None = None):
        """Bad values are a ConfigError naming the field (dashrag's errors, not pydantic's)."""
        try:
            super().__init__(
                lambda_mult=lambda_mult,
                embedding={"component": "MiniLMEmbedding", "params": {}} if embedding is None else embedding,
            )
        except ValidationError as exc:
            raise _config_error(exc, "mmr.") from None

    lambda_mult: float = Field(DEFAULT_MMR_LAMBDA, ge=0, le=1, description="MMR's λ; 0.7 as the rag-reranker.")
    embedding: dict[str, Any] = Field(
        description="An embedding component config: embeds the candidates for MMR (MiniLMEmbedding when not given)."
    )


class PipelineSettings(BaseModel):
    """Every knob of the pipeline, declared once (the cascade's names and defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stage1: dict[str, Any] | None = Field(None, description="The first reranker's component config (None: none).")
    stage2: dict[str, Any] | None = Field(None, description="The precise reranker's component config (None: none).")
    stage1_top_n: int = Field(50, ge=1, le=10_000, description="How many candidates stage 1 passes on.")
    stage2_top_n: int = Field(10, ge=1, le=10_000, description="How many of them (best first) stage 2 scores.")
    top_k: int = Field(10, ge=1, le=10_000, description="How many candidates to return.")
    mmr: StagedMMR | None = Field(None, description="The MMR stage (None: off).")
    early_exit: Literal["never", "margin", "threshold"] = "never"
    exit_margin: float = Field(0.5, ge=0)
    exit_threshold: float | None = None


@dataclass(frozen=True)
class _Ranked:
    """A candidate on its way through the stages."""

    candidate: Candidate
    input_rank: int
    score: float
    scored_by: str = "input"
    stage1_score: float | None = None
    stage2_score: float | None = None
    mmr_score: float | None = None

    def out(self, rank: int) -> RankedCandidate:
        c = self.candidate
        return RankedCandidate(
            id=c.id,
            text=c.text,
            rank=rank,
            score=self.score,
            scored_by=self.scored_by,
            input_rank=self.input_rank,
            input_score=c.score,
            stage1_score=self.stage1_score,
            stage2_score=self.stage2_score,
            mmr_score=self.mmr_score,
            metadata=c.metadata,
        )


def _by_scores(ranked: list[_Ranked], scores: Sequence[float], name: str) -> list[_Ranked]:
    """``ranked`` re-ordered by a stage's ``scores`` (ties keep the order they came in), each remembering it."""
    order = np.lexsort((np.arange(len(ranked)), -np.asarray(scores, dtype=np.float64)))
    return [
        replace(ranked[i], score=float(scores[i]), scored_by=name, **{f"{name}_score": float(scores[i])}) for i in order
    ]


class StagedRerankPipeline:
    """Candidates in, reranked candidates out: stage 1, early exit, stage 2, MMR (see the module's docstring).

    ``stage1`` / ``stage2``: component configs of text rerankers (``{"component": "CrossEncoderRetriever",
    "params": {"model": ...}}``, ``HttpReranker``, ``CohereReranker``, ``JinaReranker``), validated and built
    here; ``mmr``: a :class:`StagedMMR` to run MMR. Bad settings are a ConfigError naming the field.
    """

    def __init__(
        self,
        stage1: dict[str, Any] | None = None,
        stage2: dict[str, Any] | None = None,
        *,
        stage1_top_n: int = 50,
        stage2_top_n: int = 10,
        top_k: int = 10,
        mmr: StagedMMR | None = None,
        early_exit: Literal["never", "margin", "threshold"] = "never",
        exit_margin: float = 0.5,
        exit_threshold: float | None = None,
    ):
        try:
            self.settings = PipelineSettings(
                stage1=stage1,
                stage2=stage2,
                stage1_top_n=stage1_top_n,
                stage2_top_n=stage2_top_n,
                top_k=top_k,
                mmr=mmr,
                early_exit=early_exit,
                exit_margin=exit_margin,
                exit_threshold=exit_threshold,
            )
        except ValidationError as exc:
            raise _config_error(exc) from None
        s = self.settings
        if s.early_exit == "threshold" and s.exit_threshold is None:
            raise ConfigError("exit_threshold: early_exit 'threshold' needs exit_threshold")
        self.stages: dict[str, TextReranker] = {
            name: _text_reranker(config, name)
            for name, config in (("stage1", s.stage1), ("stage2", s.stage2))
            if config is not None
        }
        self.embedding: Any = None if s.mmr is None else _built(s.mmr.embedding, "embedding", "mmr.embedding")

    def rerank(self, query: str, candidates: Sequence[Candidate | dict[str, Any]]) -> RerankResult:
        """Rerank ``candidates`` (Candidate objects or their JSON) for ``query``."""
        request = request_from(
            {
                "query": query,
                "candidates": [c.model_dump(exclude_none=True) if isinstance(c, Candidate) else c for c in candidates],
            },
            "request",
        )
        return self._run(request)

    async def arerank(self, query: str, candidates: Sequence[Candidate | dict[str, Any]]) -> RerankResult:
        """:meth:`rerank`, awaited: the models run in a worker thread, so the event loop is free meanwhile."""
        return await asyncio.to_thread(self.rerank, query, candidates)

    def rerank_all(self, requests: Sequence[RerankRequest]) -> list[RerankResult]:
        """Every request in turn, with the same loaded models (what ``dashrag rerank`` runs)."""
        return [self._run(request) for request in requests]

    def _run(self, request: RerankRequest) -> RerankResult:
        s, query = self.settings, request.query
        timings: dict[str, float] = {}
        context: dict[str, Any] = {"query": query, "candidates": len(request.candidates)}
        ranked = sorted((_Ranked(c, 0, c.first_score) for c in request.candidates), key=lambda r: -r.score)
        ranked = [replace(r, input_rank=rank) for rank, r in enumerate(ranked, start=1)]
        if "stage1" in self.stages:
            ranked = self._scored("stage1", query, ranked, timings, context)
        ranked = ranked[: s.stage1_top_n]
        with stage("early_exit", timings, {**context, "rule": s.early_exit}):
            exit_now, why = should_exit_early([r.score for r in ranked], s.early_exit, s.exit_margin, s.exit_threshold)
        record: dict[str, Any] = {}
        head = len(ranked)  # the candidates whose scores are on one scale: the last stage's
        if not exit_now and "stage2" in self.stages:
            head = min(s.stage2_top_n, len(ranked))
            ranked = self._scored("stage2", query, ranked[:head], timings, context) + ranked[head:]
            record["stage2_scored"] = head
        if exit_now or s.mmr is None:
            chosen = ranked[: s.top_k]
        else:  # MMR picks among the last stage's candidates; the rest follow in their order
            picked, record["mmr"] = self._mmr(ranked[:head], s.mmr.lambda_mult, timings, context)
            chosen = (picked + ranked[head:])[: s.top_k]
        path = "early_exit" if exit_now else "+".join([*self.stages, *(["mmr"] if s.mmr else [])]) or "input"
        selection = {
            "path": path,
            "reason": why,
            "candidates": len(request.candidates),
            "returned": len(chosen),
            "stage_ms": timings,
            **record,
        }
        return RerankResult(
            query=query, results=[r.out(rank) for rank, r in enumerate(chosen, start=1)], selection=selection
        )

    def _scored(
        self, name: str, query: str, ranked: list[_Ranked], timings: dict[str, float], context: dict[str, Any]
    ) -> list[_Ranked]:
        reranker = self.stages[name]
        role = STAGE_ROLES[name]  # the error names the reference's stage: stage 1 is "fast", stage 2 "precise"
        with stage(role, timings, {**context, "reranker": reranker.component_name, "scored": len(ranked)}):
            scores = reranker.rerank_texts(query, [r.candidate.text for r in ranked])
            if len(scores) != len(ranked):
                raise RerankerError(
                    role,
                    f"{reranker.component_name} gave {len(scores)} scores for {len(ranked)} texts",
                    {**context, "stage": role},
                )
        timings[name] = timings.pop(role)
        return _by_scores(ranked, scores, name)

    def _mmr(
        self, ranked: list[_Ranked], lam: float, timings: dict[str, float], context: dict[str, Any]
    ) -> tuple[list[_Ranked], dict[str, Any]]:
        k = self.settings.top_k
        with stage("mmr", timings, {**context, "lambda": lam}):
            if len(ranked) <= 1:
                return ranked[:k], {"ran": False, "lambda": lam, "why": f"{len(ranked)} candidate(s)"}
            vectors = self.embedding.embed_documents([r.candidate.text for r in ranked])
            picks = cosine_mmr([r.score for r in ranked], vectors, k, lam)
        return [replace(ranked[p.index], mmr_score=p.score) for p in picks], {"ran": True, "lambda": lam}

    def close(self) -> None:
        """Release the stages' models."""
        for component in [*self.stages.values(), self.embedding]:
            if isinstance(component, ConfigObject):
                component.close()

    def __enter__(self) -> StagedRerankPipeline:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _built(config: dict[str, Any], kind: str, where: str) -> ConfigObject:
    try:
        return build_component(config, kind)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _text_reranker(config: dict[str, Any], where: str) -> TextReranker:
    component = _built(config, "retriever", where)
    if not isinstance(component, TextReranker):
        raise ConfigError(
            f"{where}: {component.component_name} cannot rerank texts (a stage is a CrossEncoderRetriever, "
            "HttpReranker, CohereReranker or JinaReranker)"
        )
    return component


def rerank_input(text: str, where: str, pipeline: StagedRerankPipeline) -> tuple[list[RerankResult], bool]:
    """``dashrag rerank``'s work: the requests in ``text`` (one JSON object, or JSON Lines) reranked by
    ``pipeline``; also whether the input was JSON Lines (the answer is written the same way)."""
    requests, as_lines = read_requests(text, where)
    return pipeline.rerank_all(requests), as_lines
