"""Metric names, hand-computed figures, and a cross-check against ir_measures on SciFact-shaped runs."""

from __future__ import annotations

import random
from math import log2

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.errors import ConfigError
from dashrag.evaluation.beir import load_split
from dashrag.evaluation.metrics import KNOWN_METRICS, Evaluator, Metric, evaluate, parse_metric, parse_metrics

ALL = "ndcg@10,recall@100,mrr@10,map@100,precision@10"

# One query with graded judgements, worked by hand below.
HAND_QRELS = {"q1": {"d1": 2, "d3": 1, "d5": 1, "d9": 1}}
HAND_RUN = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d4": 0.6, "d5": 0.5}}


def test_names_map_to_trec_eval_measures():
    assert [parse_metric(n).trec_measure for n in ALL.split(",")] == [
        "ndcg_cut.10", "recall.100", "recip_rank", "map_cut.100", "P.10",
    ]


def test_names_are_case_and_space_insensitive():
    assert parse_metric(" nDCG@10 ") == Metric("ndcg", 10)


def test_a_list_of_names_keeps_order_and_drops_duplicates():
    assert [m.label for m in parse_metrics("recall@100,ndcg@10,recall@100")] == ["recall@100", "ndcg@10"]


@pytest.mark.parametrize("name", ["bleu@10", "ndcg", "ndcg@", "ndcg@ten", "ndcg@-1", "@10"])
def test_an_unknown_metric_is_a_config_error_listing_the_known_ones(name):
    with pytest.raises(ConfigError) as info:
        parse_metric(name)
    assert all(known in str(info.value) for known in KNOWN_METRICS)


def test_a_zero_cutoff_is_refused():
    with pytest.raises(ConfigError, match="at least 1"):
        parse_metric("ndcg@0")


def test_ndcg_by_hand_uses_linear_gains_and_log2_discount():
    # ranks 1..5 = d1(rel 2) d2(0) d3(1) d4(0) d5(1); d9 (rel 1) never retrieved
    dcg = 2 / log2(1 + 1) + 0 + 1 / log2(3 + 1) + 0 + 1 / log2(5 + 1)
    # ideal order: 2, 1, 1, 1 at ranks 1..4
    ideal = 2 / log2(1 + 1) + 1 / log2(2 + 1) + 1 / log2(3 + 1) + 1 / log2(4 + 1)
    assert evaluate(HAND_QRELS, HAND_RUN, "ndcg@10").mean["ndcg@10"] == pytest.approx(dcg / ideal, abs=1e-12)


def test_ndcg_cut_ignores_documents_below_the_cut():
    dcg = 2 / log2(2) + 0 + 1 / log2(4)
    ideal = 2 / log2(2) + 1 / log2(3) + 1 / log2(4)
    assert evaluate(HAND_QRELS, HAND_RUN, "ndcg@3").mean["ndcg@3"] == pytest.approx(dcg / ideal, abs=1e-12)


def test_recall_precision_and_map_by_hand():
    means = evaluate(HAND_QRELS, HAND_RUN, "recall@100,precision@10,map@100").mean
    assert means["recall@100"] == pytest.approx(3 / 4)
    assert means["precision@10"] == pytest.approx(3 / 10)  # trec_eval divides by k, not by the run length
    # precision at each relevant hit (ranks 1, 3, 5), summed over all 4 relevant documents
    assert means["map@100"] == pytest.approx((1 / 1 + 2 / 3 + 3 / 5) / 4)


def test_mrr_counts_only_hits_within_the_cut():
    qrels = {"q": {"d11": 1}}
    run = {"q": {f"d{i:02d}": 1.0 - i / 100 for i in range(1, 21)}}  # d11 is at rank 11
    means = evaluate(qrels, run, "mrr@10,mrr@20").mean
    assert means == {"mrr@10": 0.0, "mrr@20": pytest.approx(1 / 11)}


def test_a_judged_query_missing_from_the_run_counts_as_zero():
    qrels = {"q1": {"d": 1}, "q2": {"d": 1}}
    result = evaluate(qrels, {"q1": {"d": 1.0}, "q2": {}}, "ndcg@10")
    assert result.per_query["ndcg@10"] == {"q1": 1.0, "q2": 0.0}
    assert result.mean["ndcg@10"] == 0.5


def test_unjudged_queries_in_the_run_are_ignored():
    result = evaluate({"q1": {"d": 1}}, {"q1": {"d": 1.0}, "other": {"x": 1.0}}, "ndcg@10")
    assert (result.n_queries, result.mean["ndcg@10"]) == (1, 1.0)


def test_mean_over_a_subset_of_queries():
    qrels = {"q1": {"d": 1}, "q2": {"d": 1}}
    result = Evaluator(qrels, "ndcg@10").evaluate({"q1": {"d": 1.0}}, query_ids=["q1"])
    assert (result.n_queries, result.mean["ndcg@10"]) == (1, 1.0)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)]), st.floats(-5, 5), max_size=12),
    st.sets(st.sampled_from([f"d{i}" for i in range(12)]), min_size=1),
)
def test_every_metric_lies_between_zero_and_one(scores, relevant):
    means = evaluate({"q": {d: 1 for d in relevant}}, {"q": scores}, ALL).mean
    assert all(0.0 <= value <= 1.0 for value in means.values())


def _scifact_shaped_run(qrels, seed):
    """Random scores over 1,000 documents per judged query, each query's relevant ones among them."""
    rng = random.Random(seed)
    pool = [f"{rng.randrange(10**7, 10**8)}" for _ in range(3000)]
    run = {}
    for query_id, judged in qrels.items():
        documents = set(rng.sample(pool, 1000 - len(judged))) | set(judged)
        run[query_id] = {d: rng.random() for d in documents}
        for d in judged:  # push relevant documents up sometimes, so the figures are not all near 0
            if rng.random() < 0.5:
                run[query_id][d] += rng.random()
    return run


@pytest.mark.parametrize("ours,theirs", [
    ("ndcg@10", ir_measures.nDCG @ 10),
    ("recall@100", ir_measures.R @ 100),
    ("mrr@10", ir_measures.RR @ 10),
    ("map@100", ir_measures.AP @ 100),
    ("precision@10", ir_measures.P @ 10),
])
def test_agrees_with_ir_measures_per_query_on_scifact_shaped_runs(scifact_dir, ours, theirs):
    qrels = {q: dict(docs) for q, docs in load_split(scifact_dir, "test").qrels.items()}
    run = _scifact_shaped_run(qrels, seed=7)
    result = evaluate(qrels, run, ours)
    reference = {m.query_id: m.value for m in ir_measures.iter_calc([theirs], qrels, run)}
    assert set(reference) == set(qrels)
    for query_id, value in result.per_query[ours].items():
        assert value == pytest.approx(reference[query_id], abs=1e-9), query_id
