"""The evaluation report: one JSON-ready dict, a rich table of it, and a bar chart.

The JSON report is the one artefact every consumer reads (the CLI prints it,
``--json`` writes it, the README table and the plots are drawn from it), so its
shape is fixed here::

    {"dataset": str, "split": str,
     "metrics": {"ndcg@10": float, ...},                 # the whole tree (root)
     "per_node": {"root": {"component", "metrics", "n_queries", "depth",
                           "mean_elapsed_ms"}, "root.children[0]": {...}, ...},
     "n_queries": int,
     "timings": {"retrieval_s": float, "eval_s": float}}

The plot uses matplotlib's Agg canvas directly (no pyplot): no global state,
no display needed, safe in a server or a test run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dashrag.display import visible
from dashrag.evaluation.metrics import MetricResult
from dashrag.evaluation.per_node import NodeEvaluation


def build_report(
    *,
    dataset: str,
    split: str,
    result: MetricResult,
    per_node: Mapping[str, NodeEvaluation] | None = None,
    retrieval_s: float,
    eval_s: float,
) -> dict[str, Any]:
    """Assemble the JSON report of one evaluation run."""
    return {
        "dataset": dataset,
        "split": split,
        "metrics": dict(result.mean),
        "per_node": {path: node.to_json() for path, node in (per_node or {}).items()},
        "n_queries": result.n_queries,
        "timings": {"retrieval_s": float(retrieval_s), "eval_s": float(eval_s)},
    }


def node_depth(path: str) -> int:
    """How deep a node sits: ``root`` is 0, ``root.children[2]`` is 1."""
    return path.count(".children[")


def _rows(report: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """The per-node entries, or the whole tree as a single row when there are none."""
    per_node = report.get("per_node") or {}
    if per_node:
        return per_node
    return {"root": {"component": "(tree)", "metrics": report["metrics"], "n_queries": report["n_queries"]}}


def per_node_table(report: Mapping[str, Any], digits: int = 4) -> Table:
    """A rich table: one row per node (indented by depth), one column per metric."""
    labels = list(report["metrics"])
    title = f"{visible(report['dataset'])} · {visible(report['split'])} · {report['n_queries']} queries"
    table = Table(title=escape(title))  # the dataset's folder name and the split come from the user
    table.add_column("node")
    table.add_column("component")
    for label in labels:
        table.add_column(label, justify="right")
    table.add_column("queries", justify="right")
    table.add_column("ms/query", justify="right")
    for path, node in _rows(report).items():
        values = [f"{node['metrics'][label]:.{digits}f}" for label in labels]
        elapsed = node.get("mean_elapsed_ms")
        table.add_row(
            Text(visible(path)),
            Text("  " * node_depth(path) + visible(node["component"])),
            *values,
            str(node.get("n_queries", "")),
            "" if elapsed is None else f"{elapsed:.1f}",
        )
    return table


def plot_per_node(report: Mapping[str, Any], path: str | Path) -> Path:
    """Grouped bars: one group per node, one bar per metric; written as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = _rows(report)
    labels = list(report["metrics"])
    names = [f"{node['component']}\n{p}" for p, node in rows.items()]
    width = 0.8 / max(len(labels), 1)
    figure = Figure(figsize=(max(6.0, 1.6 * len(rows) + 2), 4.5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for offset, label in enumerate(labels):
        xs = [i + (offset - (len(labels) - 1) / 2) * width for i in range(len(rows))]
        heights = [node["metrics"][label] for node in rows.values()]
        bars = axes.bar(xs, heights, width=width, label=label)
        axes.bar_label(bars, fmt="%.3f", fontsize=7)
    axes.set_xticks(range(len(rows)), names, fontsize=8, rotation=20, ha="right")
    axes.set_ylim(0, 1.2)  # headroom above 1.0 for the bar labels and the legend
    axes.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    axes.set_ylabel("score")
    axes.set_title(f"per-node metrics · {report['dataset']} {report['split']}")
    axes.legend(fontsize=8, loc="upper center", ncols=max(len(labels), 1), frameon=False)
    path = Path(path)
    figure.savefig(path, format="png", dpi=110)
    return path
