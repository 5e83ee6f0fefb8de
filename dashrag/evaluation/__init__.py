"""Evaluation on BEIR-style data: judged queries, document-level runs, metrics, per-node figures.

The layer is pure: it reads judgements, turns retrieval results and traces into
runs, and scores them; building and querying trees is the caller's work (the
``eval`` and ``tune`` commands). See ``docs/evaluation.md``.

The names below are imported on first use (PEP 562): writing a TREC run from
``dashrag query`` needs ``runs`` only, not pytrec_eval or the report's tables.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dashrag.evaluation.beir import EvaluationSplit, load_split, read_qrels, read_queries
    from dashrag.evaluation.metrics import (
        KNOWN_METRICS,
        Evaluator,
        Metric,
        MetricResult,
        evaluate,
        parse_metric,
        parse_metrics,
    )
    from dashrag.evaluation.per_node import NodeEvaluation, NodeRun, collect_node_runs, evaluate_nodes, walk
    from dashrag.evaluation.report import build_report, per_node_table, plot_per_node
    from dashrag.evaluation.runs import (
        Run,
        cut,
        format_trec_run,
        max_pool,
        pool_chunks,
        pool_output,
        ranked,
        read_trec_run,
        run_from_results,
        write_trec_run,
    )

_MODULE_OF = {
    **dict.fromkeys(["EvaluationSplit", "load_split", "read_qrels", "read_queries"], "beir"),
    **dict.fromkeys(["KNOWN_METRICS", "Evaluator", "Metric", "MetricResult", "evaluate", "parse_metric",
                     "parse_metrics"], "metrics"),
    **dict.fromkeys(["NodeEvaluation", "NodeRun", "collect_node_runs", "evaluate_nodes", "walk"], "per_node"),
    **dict.fromkeys(["build_report", "per_node_table", "plot_per_node"], "report"),
    **dict.fromkeys(["Run", "cut", "format_trec_run", "max_pool", "pool_chunks", "pool_output", "ranked",
                     "read_trec_run", "run_from_results", "write_trec_run"], "runs"),
}

__all__ = [
    "EvaluationSplit",
    "Evaluator",
    "KNOWN_METRICS",
    "Metric",
    "MetricResult",
    "NodeEvaluation",
    "NodeRun",
    "Run",
    "build_report",
    "collect_node_runs",
    "cut",
    "evaluate",
    "evaluate_nodes",
    "format_trec_run",
    "load_split",
    "max_pool",
    "parse_metric",
    "parse_metrics",
    "per_node_table",
    "plot_per_node",
    "pool_chunks",
    "pool_output",
    "ranked",
    "read_qrels",
    "read_queries",
    "read_trec_run",
    "run_from_results",
    "walk",
    "write_trec_run",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'dashrag.evaluation' has no attribute {name!r}")
    value = getattr(import_module(f"dashrag.evaluation.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))
