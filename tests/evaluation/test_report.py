"""The JSON report, its rich table, and the per-node bar chart, from a real hybrid run on SciFact."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from dashrag.evaluation.metrics import Evaluator
from dashrag.evaluation.per_node import evaluate_nodes
from dashrag.evaluation.report import build_report, node_depth, per_node_table, plot_per_node
from dashrag.evaluation.runs import pool_output

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
METRICS = "ndcg@10,recall@100,mrr@10"


@pytest.fixture(scope="module")
def report(hybrid_run):
    evaluator = Evaluator(hybrid_run.qrels, METRICS)
    root_run = {q: pool_output(trace["output"]) for q, trace in hybrid_run.traces}
    return build_report(
        dataset="scifact",
        split="test",
        result=evaluator.evaluate(root_run),
        per_node=evaluate_nodes(hybrid_run.traces, evaluator),
        retrieval_s=1.5,
        eval_s=0.25,
    )


@pytest.mark.slow
def test_report_has_the_fixed_shape(report):
    assert set(report) == {"dataset", "split", "metrics", "per_node", "n_queries", "timings"}
    assert list(report["metrics"]) == METRICS.split(",")
    assert report["timings"] == {"retrieval_s": 1.5, "eval_s": 0.25}
    assert set(report["per_node"]["root"]) == {"component", "metrics", "n_queries", "depth", "mean_elapsed_ms"}


def test_report_survives_a_json_round_trip(report):
    assert json.loads(json.dumps(report)) == report


def test_report_metrics_are_the_root_node_metrics(report):
    assert report["metrics"] == report["per_node"]["root"]["metrics"]


def test_node_depth_counts_levels():
    assert [node_depth(p) for p in ("root", "root.children[3]", "root.children[0].children[1]")] == [0, 1, 2]


def test_table_lists_every_node_with_its_figures(report):
    console = Console(width=200, record=True)
    console.print(per_node_table(report))
    text = console.export_text()
    for path, node in report["per_node"].items():
        line = next(line for line in text.splitlines() if f" {path} " in line)
        assert node["component"] in line
        assert all(f"{value:.4f}" in line for value in node["metrics"].values())


def test_table_without_per_node_shows_the_whole_tree(report):
    console = Console(width=200, record=True)
    console.print(per_node_table({**report, "per_node": {}}))
    assert f"{report['metrics']['ndcg@10']:.4f}" in console.export_text()


def test_plot_writes_a_png(report, tmp_path):
    path = plot_per_node(report, tmp_path / "nodes.png")
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 1000
