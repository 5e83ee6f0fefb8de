"""Per-node evaluation: the metrics of every node of a retriever tree, from one run's traces.

A composite's trace node holds its children's nodes, each with the chunks that
child returned (``output``). So the traces of one run already contain a run
for *every* node: pooling each node's output to documents (max-pool, as for the
root) and scoring it gives, from a single pass, what a hybrid's keyword child,
its semantic child, its fusion and its reranker each achieve. Nothing is
re-retrieved; a user sees what each part contributes.

Nodes are keyed by their position in the tree, a path that is stable across
queries and readable: ``root``, ``root.children[0]``,
``root.children[0].children[1]``. The component name travels beside the path.

A node that runs for only some queries (a stage that an early exit skipped, a
branch an agent did not take) is scored over the queries where it ran, and its
``n_queries`` says how many that was: scoring it 0 on the others would blame
it for work it was never asked to do. Requires full traces: a trace whose
output was capped (``TraceSettings.max_output``) caps the node's run too, and
``depth`` in the result shows it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from dashrag.errors import RetrievalError
from dashrag.evaluation.metrics import Evaluator
from dashrag.evaluation.runs import Run, pool_output

ROOT = "root"


def child_path(parent: str, index: int) -> str:
    """The path of child ``index`` of the node at ``parent``."""
    return f"{parent}.children[{index}]"


def walk(trace: Mapping[str, Any], path: str = ROOT) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every node of one trace with its path, parents before children, children in order."""
    yield path, trace
    for index, child in enumerate(trace.get("children") or ()):
        yield from walk(child, child_path(path, index))


@dataclass
class NodeRun:
    """What one node returned over a run: its document-level run and its cost."""

    path: str
    component: str
    run: Run = field(default_factory=dict)
    elapsed_ms: list[float] = field(default_factory=list)
    depth: int = 0  # the most chunks the node listed for any query


def collect_node_runs(traces: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, NodeRun]:
    """``[(query_id, trace), ...]`` → ``{path: NodeRun}``, paths in tree order.

    The traces must come from one tree: the same path naming two different
    components means two trees were mixed, and any figure would be nonsense.
    """
    nodes: dict[str, NodeRun] = {}
    for query_id, trace in traces:
        for path, node in walk(trace):
            component = str(node.get("component", ""))
            entry = nodes.get(path)
            if entry is None:
                entry = nodes[path] = NodeRun(path=path, component=component)
            elif entry.component != component:
                raise RetrievalError(
                    f"traces mix trees: {path} is {entry.component!r} in one trace and "
                    f"{component!r} in the trace of query {query_id!r}"
                )
            if query_id in entry.run:
                raise RetrievalError(f"query {query_id!r} has two traces")
            output = node.get("output") or ()
            entry.run[query_id] = pool_output(output)
            entry.depth = max(entry.depth, len(output))
            elapsed = node.get("elapsed_ms")
            if isinstance(elapsed, (int, float)) and math.isfinite(elapsed):
                entry.elapsed_ms.append(float(elapsed))
    return nodes


@dataclass(frozen=True)
class NodeEvaluation:
    """One node's figures: mean metrics over the judged queries where it ran."""

    path: str
    component: str
    metrics: Mapping[str, float]
    per_query: Mapping[str, Mapping[str, float]]
    n_queries: int
    depth: int
    mean_elapsed_ms: float

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "metrics": dict(self.metrics),
            "n_queries": self.n_queries,
            "depth": self.depth,
            "mean_elapsed_ms": self.mean_elapsed_ms,
        }


def evaluate_nodes(traces: Iterable[tuple[str, Mapping[str, Any]]], evaluator: Evaluator) -> dict[str, NodeEvaluation]:
    """The metrics of ``evaluator`` for every node of the tree the traces come from."""
    evaluations: dict[str, NodeEvaluation] = {}
    for path, node in collect_node_runs(traces).items():
        result = evaluator.evaluate(node.run, query_ids=node.run.keys())
        timings = node.elapsed_ms
        evaluations[path] = NodeEvaluation(
            path=path,
            component=node.component,
            metrics=dict(result.mean),
            per_query=result.per_query,
            n_queries=result.n_queries,
            depth=node.depth,
            mean_elapsed_ms=sum(timings) / len(timings) if timings else 0.0,
        )
    return evaluations
