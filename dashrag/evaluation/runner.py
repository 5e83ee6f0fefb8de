"""Run a built tree over a judged split and score it: the engine under ``dashrag eval`` and ``tune``.

The queries go through ``retrieve_batch`` in batches (one vectorised pass per
batch and leaf), with a ``top_k`` hint deep enough for the deepest metric
(``recall@100`` needs 100 documents; a tree configured with ``top_k: 5`` would
otherwise cap every recall at 5 chunks). The hint reaches every node, as the
retriever contract says, so a child evaluated inside a fusion answers exactly
what it answers alone.

Per-node figures need each node's *whole* output in its trace, so the run
switches every node's trace cap off (``max_output=None``) for its duration and
restores the previous settings afterwards; chunk texts stay out of the traces
(they are not needed to score, and would only cost memory).

Timings separate the retrievers' work from evaluation's own: ``retrieval_s`` is
the time spent inside ``retrieve_batch`` (traces included, as every caller pays
for them), ``eval_s`` the time spent pooling, scoring every node and
assembling the report. ``bench/bench_eval_overhead.py`` shows the second is
small against the first.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from dashrag.core.restriction import Restriction
from dashrag.core.retriever import Retriever
from dashrag.errors import ConfigError
from dashrag.evaluation.beir import EvaluationSplit
from dashrag.evaluation.defaults import DEFAULT_BATCH_SIZE, DEFAULT_TOP_K
from dashrag.evaluation.metrics import Evaluator, MetricResult
from dashrag.evaluation.per_node import ROOT, NodeEvaluation, evaluate_nodes
from dashrag.evaluation.report import build_report
from dashrag.evaluation.runs import pool_output

Trace = tuple[str, dict]  # (query_id, the root's trace node)


@dataclass(frozen=True)
class SplitRun:
    """Every query's trace, in split order, and the time spent retrieving them."""

    traces: list[Trace]
    retrieval_s: float


@dataclass(frozen=True)
class Evaluation:
    """The tree's figures (``result``), every node's (``per_node``), and the time scoring took."""

    result: MetricResult
    per_node: dict[str, NodeEvaluation]
    eval_s: float


def top_k_hint(top_k: int | None) -> int | None:
    """The ``top_k`` of every ``retrieve_batch`` call: a hint, or None (``None``/0: the tree's own)."""
    if top_k is None or top_k == 0:
        return None
    if top_k < 0:
        raise ConfigError(f"top_k must be positive (or 0 for the tree's own top_k), not {top_k}")
    return int(top_k)


@contextmanager
def full_traces(retriever: Retriever) -> Iterator[None]:
    """Every node lists its whole output while the block runs; the previous caps come back after."""
    previous = [(node, node.trace_settings.max_output) for _, node in retriever.iter_nodes()
                if isinstance(node, Retriever)]
    retriever.set_trace_settings(max_output=None)
    try:
        yield
    finally:
        for node, cap in previous:
            node.trace_settings.max_output = cap


def run_queries(
    retriever: Retriever,
    queries: Mapping[str, str],
    *,
    top_k: int | None = DEFAULT_TOP_K,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: Callable[[int], None] | None = None,
    filters: Any = None,
) -> SplitRun:
    """Answer ``queries`` (``{query_id: text}``) in batches, keeping each query's full trace.

    ``on_batch(n)`` is called after each batch with the number of queries it held
    (a progress bar advances by it). ``filters``: a metadata filter every query is answered under.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be at least 1, not {batch_size}")
    hint = top_k_hint(top_k)
    restriction = None if filters is None else Restriction.where(filters)  # parsed once, refused before any query
    ids = list(queries)
    traces: list[Trace] = []
    retrieval_s = 0.0
    with full_traces(retriever):
        for start in range(0, len(ids), batch_size):
            batch = ids[start:start + batch_size]
            began = time.perf_counter()
            answers = retriever.retrieve_batch([queries[q] for q in batch], top_k=hint, restriction=restriction)
            retrieval_s += time.perf_counter() - began
            traces.extend((query_id, node) for query_id, (_, node) in zip(batch, answers))
            if on_batch is not None:
                on_batch(len(batch))
    return SplitRun(traces=traces, retrieval_s=retrieval_s)


def root_run(traces: list[Trace]) -> dict[str, dict[str, float]]:
    """The tree's document-level run: each root output max-pooled to documents."""
    return {query_id: pool_output(node["output"]) for query_id, node in traces}


def score_run(run: SplitRun, evaluator: Evaluator, per_node: bool = True) -> Evaluation:
    """The tree's metrics over every judged query and, with ``per_node``, every node's.

    With per-node figures on, the root's entry *is* the tree's result (the run
    holds every judged query, so averaging over the queries where the root ran
    is averaging over all of them): pooling and scoring it twice would only
    double evaluation's cost.
    """
    began = time.perf_counter()
    if per_node:
        nodes = evaluate_nodes(run.traces, evaluator)
        root = nodes[ROOT]
        result = MetricResult(per_query=root.per_query, mean=root.metrics, n_queries=root.n_queries)
    else:
        nodes = {}
        result = evaluator.evaluate(root_run(run.traces))
    return Evaluation(result=result, per_node=nodes, eval_s=time.perf_counter() - began)


def evaluate_tree(
    retriever: Retriever,
    split: EvaluationSplit,
    metrics: str | Evaluator,
    *,
    top_k: int | None = DEFAULT_TOP_K,
    batch_size: int = DEFAULT_BATCH_SIZE,
    per_node: bool = True,
    on_batch: Callable[[int], None] | None = None,
    filters: Any = None,
) -> dict[str, Any]:
    """Run ``retriever`` over ``split`` and return the JSON report (:func:`build_report`).

    ``metrics`` is a spec (``"ndcg@10,recall@100"``) or an :class:`Evaluator`
    already built for this split's judgements (reuse one across many trees).
    The report also records the ``top_k`` hint used, and the metadata filter (``filters``) when there is one.
    """
    evaluator = metrics if isinstance(metrics, Evaluator) else Evaluator(split.qrels, metrics)
    run = run_queries(retriever, split.queries, top_k=top_k, batch_size=batch_size, on_batch=on_batch,
                      filters=filters)
    began = time.perf_counter()
    scored = score_run(run, evaluator, per_node=per_node)
    report = build_report(dataset=split.dataset, split=split.split, result=scored.result, per_node=scored.per_node,
                          retrieval_s=run.retrieval_s, eval_s=0.0)
    report["timings"]["eval_s"] = time.perf_counter() - began  # scoring, per-node and the report itself
    report["top_k"] = top_k_hint(top_k)
    if filters is not None:
        report["filters"] = filters
    return report
