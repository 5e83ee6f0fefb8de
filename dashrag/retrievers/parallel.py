"""ParallelRetriever: run children concurrently and fuse their rankings.

Children run side by side in threads (the last in the calling thread). That pays
where children of similar cost do their heavy work without the GIL (two dense children
on onnxruntime, say); a child much cheaper than its sibling (BM25 beside a dense child)
saves less than the hand-off costs, and a child that takes the GIL back hundreds of
times per query (torch, operator by operator) makes its siblings wait for it.
``concurrent: false`` runs the children one after the other; bench/bench_parallel.py
measures both. Fusion itself is the pure algebra of :mod:`dashrag.fusion`
(docs/fusion.md); every fused chunk keeps each child's rank and raw score in its
provenance and in the trace.
"""

from __future__ import annotations

import contextvars
import math
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from functools import partial
from typing import Any, Callable, Sequence

from pydantic import Field, field_validator

from dashrag.core.ask import Ask
from dashrag.core.params import ComponentParams, ComponentSpec, components_field, same_length, spec, top_k_field
from dashrag.core.registry import register
from dashrag.core.retriever import CompositeRetriever, Result
from dashrag.documents.model import ScoredChunk
from dashrag.errors import ConfigError
from dashrag.fusion import FusionStrategy, fuse, resolve_weights

DEFAULT_CHILDREN = (spec("BM25Retriever"), spec("DenseEmbeddingRetriever"))


class ParallelParams(ComponentParams):
    # at least two, as DashAI requires (one child needs no fusion)
    children: list[ComponentSpec] = components_field("retriever", DEFAULT_CHILDREN, min_length=2,
                                                     description="Retrievers run side by side.")
    merge_strategy: FusionStrategy = Field(
        "round_robin", description="How the children's rankings are fused (see docs/fusion.md).")
    weights: list[float] | None = Field(None, description="One non-negative weight per child (default: all 1).")
    rrf_k: float = Field(60.0, gt=0, description="The k of reciprocal rank fusion, 1 / (k + rank).")
    top_k: int | None = top_k_field(None, "Cut the fused list (default: keep every fused chunk).")
    concurrent: bool = Field(True, description="Run the children in parallel threads.")

    RULES = (same_length("weights", "children"),)

    @field_validator("weights")
    @classmethod
    def _usable_weights(cls, weights: list[float] | None) -> list[float] | None:
        if weights is not None:
            try:
                resolve_weights(weights, len(weights))  # non-negative, finite, not all zero
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return weights


def run_concurrently(calls: Sequence[Callable[[], Any]], pool: ThreadPoolExecutor | None) -> list[Any]:
    """Results of ``calls`` in order, all at once when ``pool`` is given: every call but the last
    goes to the pool and the calling thread runs the last itself rather than only waiting (one
    thread hand-off fewer on every query). Exceptions propagate once every call has ended."""
    if pool is None or len(calls) < 2:
        return [call() for call in calls]
    # each call in a copy of the caller's context: what a query keeps there (core/observe.py) reaches its children
    futures = [pool.submit(contextvars.copy_context().run, call) for call in calls[:-1]]
    try:
        last = calls[-1]()
    finally:
        wait(futures)
    return [f.result() for f in futures] + [last]


def mean_distances(chunk_ids: list[int], per_child: list[dict[int, float]],
                   weights: Sequence[float] | None) -> list[tuple[int, float]]:
    """Each chunk's weighted mean distance over the children that scored it (a child of weight 0 counts
    for nothing); a chunk no child scored is left out, as DashAI leaves it."""
    w = resolve_weights(weights, len(per_child))
    mean = []
    for cid in dict.fromkeys(chunk_ids):
        votes = [(w[i], d[cid]) for i, d in enumerate(per_child) if cid in d and w[i] > 0]
        total = math.fsum(weight for weight, _ in votes)
        if total > 0:
            mean.append((cid, math.fsum(weight * dist for weight, dist in votes) / total))
    return mean


@register(kind="retriever", icon="GitMerge", category="composite",
          en=("Parallel fusion", "Runs several retrievers side by side and fuses their rankings."),
          es=("Fusión en paralelo", "Ejecuta varios recuperadores a la vez y fusiona sus rankings."),
          representation={"en": "{merge_strategy} of [{children}]", "es": "{merge_strategy} de [{children}]"},
          operation="Runs every child on the query concurrently, deduplicates by chunk id and fuses the rankings.")
class ParallelRetriever(CompositeRetriever[ParallelParams]):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def _threads(self) -> ThreadPoolExecutor | None:
        """One pool per node, kept for its life: threads (and the per-thread state of the
        libraries the children call, such as torch's) are not re-created on every query."""
        if not self.params.concurrent:
            return None
        with self._pool_lock:
            if self._pool is None:
                # the calling thread runs the last child itself (run_concurrently)
                self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.get_children()) - 1),
                                                thread_name_prefix="dashrag-parallel")
            return self._pool

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _fuse(self, lists: list[list[ScoredChunk]], ask: Ask) -> tuple[list[ScoredChunk], dict]:
        p = self.params
        top_k = ask.top_k if ask.top_k is not None else p.top_k
        fused = fuse(lists, p.merge_strategy, p.weights, k=p.rrf_k, source=self.component_name, top_k=top_k)
        total = sum(len(x) for x in lists)
        unique = len({c.id for x in lists for c in x})
        selection = {"strategy": p.merge_strategy, "weights": p.weights, "received": total,
                     "duplicates_merged": total - unique, "returned": len(fused),
                     "summary": f"{p.merge_strategy}: {total} in, {total - unique} duplicates merged, {len(fused)} out"}
        return fused, selection

    def _retrieve_batch(self, queries: list[str], ask: Ask) -> list[Result]:
        children = self.get_children()
        per_child = run_concurrently([partial(c.answer_batch, queries, ask) for c in children],
                                     self._threads())
        results: list[Result] = []
        for i in range(len(queries)):
            lists = [answers[i][0] for answers in per_child]
            fused, selection = self._fuse(lists, ask)
            results.append((fused, [answers[i][1] for answers in per_child], selection))
        return results

    def _retrieve(self, query: str, ask: Ask) -> Result:
        children = self.get_children()
        answers = run_concurrently([partial(c.answer, query, ask) for c in children], self._threads())
        fused, selection = self._fuse([a[0] for a in answers], ask)
        return fused, [a[1] for a in answers], selection

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """DashAI's distance: the mean of the children's distances of each chunk (weighted by ``weights`` when
        given), ascending, ties by the order asked."""
        distances = [dict(child.score_chunks(chunk_ids, query)) for child in self.get_children()]
        mean = mean_distances(list(chunk_ids), distances, self.params.weights)
        return sorted(mean, key=lambda pair: pair[1])
