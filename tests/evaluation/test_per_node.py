"""Per-node evaluation: paths, pooling of each node's output, and agreement with each child run alone."""

from __future__ import annotations

import pytest

from dashrag.errors import RetrievalError
from dashrag.evaluation.metrics import Evaluator
from dashrag.evaluation.per_node import collect_node_runs, evaluate_nodes, walk
from dashrag.evaluation.runs import run_from_results

METRICS = "ndcg@10,recall@100,mrr@10,map@100,precision@10"


def _node(component, output=(), children=(), elapsed_ms=1.0):
    return {
        "component": component,
        "params": {},
        "query": "q",
        "elapsed_ms": elapsed_ms,
        "output": [
            {"chunk_id": i, "document_id": d, "position": 0, "score": s, "source": component}
            for i, (d, s) in enumerate(output)
        ],
        "children": list(children),
    }


def test_walk_names_nodes_by_position_parents_first():
    tree = _node("A", children=[_node("B", children=[_node("D"), _node("E")]), _node("C")])
    assert [(path, node["component"]) for path, node in walk(tree)] == [
        ("root", "A"),
        ("root.children[0]", "B"),
        ("root.children[0].children[0]", "D"),
        ("root.children[0].children[1]", "E"),
        ("root.children[1]", "C"),
    ]


def test_each_node_output_is_max_pooled_to_documents():
    trace = _node(
        "F", output=[("d1", 0.9), ("d2", 0.8), ("d1", 0.95)], children=[_node("L", output=[("d3", 2.0), ("d3", 5.0)])]
    )
    nodes = collect_node_runs([("q1", trace)])
    assert nodes["root"].run == {"q1": {"d1": 0.95, "d2": 0.8}}
    assert nodes["root.children[0]"].run == {"q1": {"d3": 5.0}}
    assert nodes["root"].depth == 3


def test_traces_of_two_different_trees_are_refused():
    first = _node("F", children=[_node("BM25")])
    second = _node("F", children=[_node("Dense")])
    with pytest.raises(RetrievalError, match=r"root\.children\[0\]"):
        collect_node_runs([("q1", first), ("q2", second)])


def test_a_query_traced_twice_is_refused():
    with pytest.raises(RetrievalError, match="two traces"):
        collect_node_runs([("q1", _node("A")), ("q1", _node("A"))])


def test_a_node_that_ran_for_some_queries_is_scored_over_those_only():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    with_stage = _node("Cascade", output=[("d1", 1.0)], children=[_node("Precise", output=[("d1", 3.0)])])
    skipped_stage = _node("Cascade", output=[("d9", 1.0)])  # early exit: the precise stage never ran
    evaluations = evaluate_nodes([("q1", with_stage), ("q2", skipped_stage)], Evaluator(qrels, "mrr@10"))
    assert evaluations["root"].n_queries == 2
    assert evaluations["root"].metrics["mrr@10"] == pytest.approx(0.5)
    assert evaluations["root.children[0]"].n_queries == 1
    assert evaluations["root.children[0]"].metrics["mrr@10"] == 1.0


def test_mean_elapsed_ms_averages_each_node_over_its_queries():
    traces = [("q1", _node("A", elapsed_ms=2.0)), ("q2", _node("A", elapsed_ms=4.0))]
    evaluations = evaluate_nodes(traces, Evaluator({"q1": {"d": 1}, "q2": {"d": 1}}, "ndcg@10"))
    assert evaluations["root"].mean_elapsed_ms == pytest.approx(3.0)


def test_hybrid_tree_on_scifact_has_one_entry_per_node(hybrid_run):
    evaluations = evaluate_nodes(hybrid_run.traces, Evaluator(hybrid_run.qrels, METRICS))
    assert {path: e.component for path, e in evaluations.items()} == {
        "root": "RRF",
        "root.children[0]": "BM25",
        "root.children[1]": "TFIDF",
    }
    assert all(e.n_queries == len(hybrid_run.qrels) for e in evaluations.values())


@pytest.mark.parametrize("path,search", [("root", "rrf"), ("root.children[0]", "bm25"), ("root.children[1]", "tfidf")])
def test_per_node_metrics_equal_each_node_run_alone(hybrid_run, path, search):
    """The figure a node gets from the composite's traces is the figure of running that node by itself."""
    evaluator = Evaluator(hybrid_run.qrels, METRICS)
    per_node = evaluate_nodes(hybrid_run.traces, evaluator)[path]
    alone_results = {q: hybrid_run.searches[search](text) for q, text in hybrid_run.queries.items()}
    alone = evaluator.evaluate(run_from_results(alone_results))
    assert per_node.metrics == alone.mean
    assert per_node.per_query == alone.per_query


def test_hybrid_children_get_different_figures(hybrid_run):
    """Guards the test above: if two nodes scored alike, a swapped path would go unnoticed."""
    evaluations = evaluate_nodes(hybrid_run.traces, Evaluator(hybrid_run.qrels, METRICS))
    figures = [tuple(e.metrics.values()) for e in evaluations.values()]
    assert len(set(figures)) == len(figures)


def test_hybrid_chunks_are_pooled_to_fewer_documents(hybrid_run):
    """The SciFact fixture really has several chunks per document, so pooling is exercised."""
    nodes = collect_node_runs(hybrid_run.traces)
    bm25 = nodes["root.children[0]"]
    assert hybrid_run.n_chunks > hybrid_run.n_documents
    assert any(len(documents) < bm25.depth for documents in bm25.run.values())
