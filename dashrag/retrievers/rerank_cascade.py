"""RerankCascadeRetriever: a cheap stage, an early-exit rule, an expensive stage, optional MMR.

The two-stage rerank of the seeds' rag-reranker. The ``fast`` retriever narrows
the corpus to ``stage1_top_n`` candidates. When the first-stage ranking is
already decisive (its top score clears a threshold, or leads the runner-up by a
relative margin) the expensive ``precise`` stage is skipped and the first-stage
scores are kept: that is the early exit, and the trace says which path ran and
why. Otherwise the candidates are hydrated (their chunks looked up) and re-scored
by ``precise`` through ``score_chunks``, so any retriever (a cross-encoder, a
dense model) can be the precise stage. With ``mmr_lambda`` set, a final MMR
stage re-orders the survivors for diversity.

A failure inside any stage raises :class:`StageError` naming the stage
(``fast``, ``early_exit``, ``hydrate``, ``precise``, ``mmr``), so an operator
knows which model or index to look at.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator, Literal, Sequence

from pydantic import Field

from dashrag.core.params import ComponentParams, ComponentSpec, Rule, component_field, less_or_equal, spec
from dashrag.core.registry import register
from dashrag.core.retriever import CompositeRetriever, Result
from dashrag.documents.model import ScoredChunk
from dashrag.embeddings.overflow import unit_rows
from dashrag.errors import StageError
from dashrag.retrievers.mmr import mmr_select

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
    stage1_top_n: int = Field(50, ge=1, description="How many candidates the fast stage passes on.")
    top_k: int = Field(10, ge=1, description="How many chunks to return.")
    early_exit: Literal["never", "margin", "threshold"] = Field(
        "never", description="When to skip the precise stage: never, on a decisive margin, or above a score threshold."
    )
    exit_margin: float = Field(
        0.5, ge=0, description="Relative lead of the top first-stage score over the runner-up that counts as decisive."
    )
    exit_threshold: float | None = Field(
        None, description="First-stage score at or above which the top is decisive (threshold mode)."
    )
    mmr_lambda: float | None = Field(
        None, ge=0, le=1, description="Re-order the survivors with MMR at this λ (None: no MMR stage)."
    )
    mmr_embedding: ComponentSpec = component_field(
        "embedding", spec("MiniLMEmbedding"), description="Embeds the survivors for the MMR stage."
    )

    RULES = (
        less_or_equal("top_k", "stage1_top_n"),
        Rule("requires", ("early_exit", "exit_threshold"), "threshold mode needs exit_threshold", _threshold_given),
    )


@contextmanager
def stage(name: str, timings: dict[str, float]) -> Iterator[None]:
    """Time a stage and turn any failure inside it into a StageError naming it."""
    start = time.perf_counter()
    try:
        yield
    except StageError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure is reported with its stage
        raise StageError(name, f"{type(exc).__name__}: {exc}") from exc
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
    representation="{fast} → {precise} (top {stage1_top_n} → {top_k}, early exit {early_exit})",
    operation="Retrieves stage1_top_n with fast, exits early when decisive, "
    "else re-scores with precise, optionally MMR.",
)
class RerankCascadeRetriever(CompositeRetriever[RerankCascadeParams]):
    SCHEMA = RerankCascadeParams

    def _retrieve(self, query: str, **kwargs: Any) -> Result:
        p = self.params
        k = int(kwargs.get("top_k") or p.top_k)
        timings: dict[str, float] = {}
        with stage("fast", timings):
            candidates, fast_node = self.nested["fast"].retrieve(query, **{**kwargs, "top_k": p.stage1_top_n})
        nodes = [fast_node]
        with stage("early_exit", timings):
            exit_now, why = should_exit_early(
                [c.score for c in candidates], p.early_exit, p.exit_margin, p.exit_threshold
            )
        if exit_now:
            chosen = candidates[:k]
        else:
            with stage("hydrate", timings):
                chunks = self.require_infra().chunks
                by_id = {c.id: ScoredChunk(chunks.by_id(c.id), c.score, c.source, c.provenance) for c in candidates}
            with stage("precise", timings):
                precise = self.nested["precise"]
                start = time.perf_counter()
                ranked = precise.score_chunks(list(by_id), query)
                chosen = [
                    by_id[cid].rescored(
                        -dist, precise.component_name, fast_score=by_id[cid].score, precise_distance=dist
                    )
                    for cid, dist in ranked
                ]
                nodes.append(
                    precise._node(query, chosen, (time.perf_counter() - start) * 1000, [], None, rescored=True)
                )
            chosen = chosen[:k] if p.mmr_lambda is None else self._mmr(query, chosen, k, p.mmr_lambda, timings)
        path = "early_exit" if exit_now else ("precise+mmr" if p.mmr_lambda is not None else "precise")
        selection = {
            "path": path,
            "reason": why,
            "candidates": len(candidates),
            "returned": len(chosen),
            "stage_ms": timings,
            "summary": f"{path}: {why}",
        }
        return chosen, nodes, selection

    def _mmr(self, query: str, chosen: list[ScoredChunk], k: int, lambda_: float,
             timings: dict[str, float]) -> list[ScoredChunk]:
        with stage("mmr", timings):
            if not chosen:
                return []
            embedding = self.nested["mmr_embedding"]
            vectors = unit_rows(embedding.embed_documents([c.chunk.text for c in chosen]))
            query_vector = unit_rows(embedding.embed_queries([query]))[0]
            picks = mmr_select(vectors @ query_vector, vectors @ vectors.T, float(lambda_), k)
            return [
                chosen[pk.index].rescored(
                    pk.score, self.component_name, mmr_relevance=pk.relevance, mmr_max_similarity=pk.max_similarity
                )
                for pk in picks
            ]

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """The precise stage's distances: it is the cascade's judgement of a chunk."""
        return self.nested["precise"].score_chunks(chunk_ids, query)
