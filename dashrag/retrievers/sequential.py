"""SequentialRetriever: a cascade. The first child proposes; each later child re-scores.

Stage 1 retrieves its ``top_k`` candidates. Every later stage receives only the
survivors, re-scores them through ``score_chunks`` (so any retriever can be a
later stage) and keeps its own ``top_k`` best. A stage's ``top_k`` must be smaller
than the previous stage's (DashAI's rule: one that keeps as many only re-orders, one
that keeps more could never be filled), a validation error otherwise.

A chunk's score is the negated distance of the last stage that scored it
(higher is better); every stage's distance stays in its provenance.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from dashrag.core.ask import Ask
from dashrag.core.params import ComponentParams, ComponentSpec, Rule, components_field, spec
from dashrag.core.registry import register
from dashrag.core.retriever import CompositeRetriever, Result
from dashrag.documents.model import ScoredChunk

DEFAULT_STAGES = (spec("BM25Retriever", top_k=50), spec("DenseEmbeddingRetriever", top_k=10))


def _top_k_of(child: ComponentSpec) -> int | None:
    value = child.params.get("top_k")
    return value if isinstance(value, int) else None


def _non_increasing_top_k(params: SequentialParams) -> str | None:
    sizes = [_top_k_of(c) for c in params.children]
    for i, (before, size) in enumerate(zip(sizes, sizes[1:]), start=1):
        if size is not None and before is not None and size > before:
            return (f"children[{i}].params.top_k ({size}) is larger than children[{i - 1}].params.top_k "
                    f"({before}): a cascade cannot grow")
    return None


def _no_stage_of_the_same_size(params: SequentialParams) -> str | None:
    """DashAI's rule on top: each stage keeps strictly fewer chunks than the one before (a stage that keeps
    as many only re-orders, it does not narrow)."""
    sizes = [_top_k_of(c) for c in params.children]
    for i, (before, size) in enumerate(zip(sizes, sizes[1:]), start=1):
        if size is not None and size == before:
            return (f"children[{i}].params.top_k ({size}) equals children[{i - 1}].params.top_k ({before}): "
                    "each stage of a cascade narrows")
    return None


class SequentialParams(ComponentParams):
    children: list[ComponentSpec] = components_field(
        "retriever", DEFAULT_STAGES, min_length=2, description="Stages in order: the first proposes, the rest re-score."
    )

    RULES = (
        Rule(
            "non_increasing",
            ("children.*.params.top_k",),
            "each stage's top_k is at most the previous stage's",
            _non_increasing_top_k,
        ),
        Rule(
            "decreasing",
            ("children.*.params.top_k",),
            "no stage keeps as many chunks as the previous one (DashAI's rule: each stage narrows)",
            _no_stage_of_the_same_size,
        ),
    )


@register(
    kind="retriever",
    icon="ListOrdered",
    category="composite",
    en=("Sequential cascade", "The first retriever proposes candidates; each next one re-scores and narrows them."),
    es=("Cascada secuencial", "El primer recuperador propone candidatos; cada siguiente los re-puntúa y reduce."),
    representation={"en": "cascade [{children}]", "es": "cascada [{children}]"},
    operation="Retrieves with the first child, then narrows the survivors stage by stage with score_chunks.",
)
class SequentialRetriever(CompositeRetriever[SequentialParams]):
    def _rescore(self, stage: Any, index: int, candidates: Sequence[ScoredChunk], query: str) -> list[ScoredChunk]:
        by_id = {c.id: c for c in candidates}
        ranked = stage.score_chunks(list(by_id), query)[: getattr(stage.params, "top_k", None)]  # no top_k: keep all
        kept = []
        for cid, dist in ranked:
            distances = {f"stage{index}_distance": dist}
            if index == 1:  # the proposer's own score, as a distance, before the first re-scoring replaces it
                distances["stage0_distance"] = -by_id[cid].score
            kept.append(by_id[cid].rescored(-dist, stage.component_name, **distances))
        return kept

    def _retrieve(self, query: str, ask: Ask) -> Result:
        first, *later = self.get_children()
        candidates, first_node = first.answer(query, ask.with_top_k(None))
        nodes, sizes = [first_node], [len(candidates)]
        for index, stage in enumerate(later, 1):
            start = time.perf_counter()
            candidates = self._rescore(stage, index, candidates, query)
            sizes.append(len(candidates))
            nodes.append(stage._node(query, candidates, (time.perf_counter() - start) * 1000, [], None, rescored=True))
        if ask.top_k is not None:
            candidates = candidates[:ask.top_k]
        return candidates, nodes, {"stage_sizes": sizes, "summary": " → ".join(map(str, sizes))}

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        return self.get_children()[-1].score_chunks(chunk_ids, query)
