"""The runner: a real tree over a judged SciFact subset, batched, with full traces and per-node figures."""

from __future__ import annotations

from typing import Any

import pytest

import dashrag
from dashrag.api import prepare_corpus
from dashrag.core.factory import build_component
from dashrag.core.retriever import Retriever
from dashrag.errors import ConfigError
from dashrag.evaluation.beir import load_split
from dashrag.evaluation.metrics import Evaluator
from dashrag.evaluation.runner import evaluate_tree, run_queries, score_run, top_k_hint
from tests.fixtures.scifact import BEIR_SUBSET_QUERIES

METRICS = "ndcg@10,recall@100,mrr@10"
CHUNKER = {"component": "RecursiveCharacterChunker", "params": {"chunk_size": 600, "chunk_overlap": 0}}


@pytest.fixture(scope="module")
def infra(scifact_subset, tmp_path_factory):
    """The subset chunked (600 characters, so documents have several chunks) and stored once."""
    return prepare_corpus(dashrag.Corpus.from_beir(scifact_subset), tmp_path_factory.mktemp("work"), CHUNKER)


@pytest.fixture(scope="module")
def test_split(scifact_subset):
    return load_split(scifact_subset, "test")


def fitted(config: dict, infra):
    tree = build_component(config, "retriever")
    tree.inject_infra(infra)
    tree.init_model()
    return tree


def tfidf(top_k: int = 5, **vectorizer) -> dict:
    return {
        "component": "TFIDFRetriever",
        "params": {"top_k": top_k, "vectorizer": {"component": "BagOfWordsConverter", "params": vectorizer}},
    }


HYBRID: dict[str, Any] = {
    "component": "ParallelRetriever",
    "params": {
        "children": [tfidf(), tfidf(ngram_max=2, stemmer="english", stop_words="english")],
        "merge_strategy": "rrf",
    },
}


def test_the_subset_holds_every_judged_document(scifact_subset, test_split):
    corpus_ids = {d.id for d in dashrag.Corpus.from_beir(scifact_subset)}
    assert len(test_split) == BEIR_SUBSET_QUERIES
    assert {d for docs in test_split.qrels.values() for d in docs} <= corpus_ids


def test_the_top_k_hint_reaches_past_the_trees_own_top_k(infra, test_split):
    run = run_queries(fitted(tfidf(top_k=5), infra), test_split.queries, top_k=100)
    assert max(len(node["output"]) for _, node in run.traces) == 100


def test_without_a_hint_each_node_keeps_its_own_top_k(infra, test_split):
    run = run_queries(fitted(tfidf(top_k=5), infra), test_split.queries, top_k=0)
    assert max(len(node["output"]) for _, node in run.traces) == 5


def test_traces_are_full_during_the_run_and_the_cap_comes_back_after(infra, test_split):
    tree = fitted(HYBRID, infra)
    tree.set_trace_settings(max_output=3)
    run = run_queries(tree, test_split.queries, top_k=50)
    assert max(len(node["children"][1]["output"]) for _, node in run.traces) == 50
    assert {n.trace_settings.max_output for _, n in tree.iter_nodes() if isinstance(n, Retriever)} == {3}


def test_one_trace_per_query_in_split_order_whatever_the_batch_size(infra, test_split):
    tree = fitted(tfidf(), infra)
    advanced = []
    small = run_queries(tree, test_split.queries, batch_size=7, on_batch=advanced.append)
    whole = run_queries(tree, test_split.queries, batch_size=1000)
    assert [q for q, _ in small.traces] == list(test_split.queries)
    assert advanced == [7] * 5 + [5]
    assert [n["output"] for _, n in small.traces] == [n["output"] for _, n in whole.traces]


def test_the_root_entry_of_per_node_is_the_trees_result(infra, test_split):
    run = run_queries(fitted(HYBRID, infra), test_split.queries)
    evaluator = Evaluator(test_split.qrels, METRICS)
    with_nodes, without = score_run(run, evaluator, per_node=True), score_run(run, evaluator, per_node=False)
    assert with_nodes.result.mean == without.result.mean
    assert with_nodes.result.per_query == without.result.per_query


def test_each_childs_per_node_figures_equal_that_child_evaluated_alone(infra, test_split):
    report = evaluate_tree(fitted(HYBRID, infra), test_split, METRICS)
    for index, child in enumerate(HYBRID["params"]["children"]):
        alone = evaluate_tree(fitted(child, infra), test_split, METRICS)
        assert report["per_node"][f"root.children[{index}]"]["metrics"] == alone["metrics"]
    assert report["per_node"]["root"]["metrics"] == report["metrics"]


def test_the_two_children_differ_so_the_per_node_check_means_something(infra, test_split):
    report = evaluate_tree(fitted(HYBRID, infra), test_split, METRICS)
    assert report["per_node"]["root.children[0]"]["metrics"] != report["per_node"]["root.children[1]"]["metrics"]


def test_the_report_records_the_hint_and_both_timings(infra, test_split):
    report = evaluate_tree(fitted(tfidf(), infra), test_split, METRICS, top_k=30)
    assert report["top_k"] == 30 and report["n_queries"] == BEIR_SUBSET_QUERIES
    assert report["timings"]["retrieval_s"] > 0 and report["timings"]["eval_s"] > 0


@pytest.mark.parametrize("top_k, expected", [(None, None), (0, None), (7, 7)])
def test_top_k_hint(top_k, expected):
    assert top_k_hint(top_k) == expected


def test_a_negative_top_k_is_a_config_error():
    with pytest.raises(ConfigError, match="top_k"):
        top_k_hint(-1)
