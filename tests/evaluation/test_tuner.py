"""The tuner: JSON paths, grid planning and its errors, the subtree cache, and the search on SciFact."""

from __future__ import annotations

import json

import pytest

import dashrag
from dashrag.api import prepare_corpus
from dashrag.errors import ConfigError
from dashrag.evaluation.beir import load_split
from dashrag.evaluation.metrics import Evaluator
from dashrag.evaluation.runner import root_run, run_queries
from dashrag.evaluation.tuner import (
    GridPoint,
    Reuse,
    SubtreeCache,
    best_index,
    parse_param,
    parse_path,
    parse_value,
    plan_grid,
    plot_tuning,
    tune,
)

from .test_runner import CHUNKER, HYBRID, fitted, tfidf

RRF_K = "params.rrf_k"
SUBLINEAR = "params.children[0].params.sublinear_tf"
WEIGHT = "params.weights[1]"
HYBRID_WEIGHTED = {**HYBRID, "params": {**HYBRID["params"], "weights": [1.0, 1.0]}}


@pytest.fixture(scope="module")
def infra(scifact_subset, tmp_path_factory):
    return prepare_corpus(dashrag.Corpus.from_beir(scifact_subset), tmp_path_factory.mktemp("work"), CHUNKER)


@pytest.fixture(scope="module")
def tuned(scifact_subset, infra):
    params = [parse_param(f"{SUBLINEAR}=false,true"), parse_param(f"{WEIGHT}=0.25,4"), parse_param(f"{RRF_K}=2,60")]
    return tune(
        HYBRID_WEIGHTED,
        params,
        infra=infra,
        train=load_split(scifact_subset, "train"),
        test=load_split(scifact_subset, "test"),
        metric="ndcg@10",
        metrics="ndcg@10,recall@100",
    )


def test_a_path_becomes_keys_and_indexes():
    assert parse_path("params.children[0].params.k1") == ("params", "children", 0, "params", "k1")
    assert parse_path("params.weights[1]") == ("params", "weights", 1)


@pytest.mark.parametrize("path", ["params..k1", "params.children[x]", "children[0].params.k1", "params.a-b"])
def test_a_malformed_path_is_a_config_error_naming_it(path):
    with pytest.raises(ConfigError) as error:
        parse_path(path)
    assert path in str(error.value)


@pytest.mark.parametrize("text, value", [("1.2", 1.2), ("60", 60), ("true", True), ("null", None), ("rrf", "rrf")])
def test_values_are_json_else_strings(text, value):
    assert parse_value(text) == value and type(parse_value(text)) is type(value)


def test_a_param_keeps_each_value_once_in_order():
    assert parse_param("params.rrf_k = 60, 10, 60").values == (60, 10)


def test_a_param_without_values_is_refused():
    with pytest.raises(ConfigError, match="PATH=v1,v2"):
        parse_param("params.rrf_k")


def test_the_grid_is_the_cartesian_product_first_param_slowest():
    points = plan_grid(HYBRID_WEIGHTED, [parse_param(f"{RRF_K}=1,2"), parse_param(f"{WEIGHT}=0.5,3")])
    assert [p.values for p in points] == [
        {RRF_K: 1, WEIGHT: 0.5},
        {RRF_K: 1, WEIGHT: 3},
        {RRF_K: 2, WEIGHT: 0.5},
        {RRF_K: 2, WEIGHT: 3},
    ]
    assert [(p.config["params"]["rrf_k"], p.config["params"]["weights"]) for p in points] == [
        (1, [1.0, 0.5]),
        (1, [1.0, 3.0]),
        (2, [1.0, 0.5]),
        (2, [1.0, 3.0]),
    ]


def test_each_point_is_the_normalised_tree_with_its_values():
    (point,) = plan_grid(HYBRID, [parse_param(f"{SUBLINEAR}=true")])
    expected = dashrag.validate_and_transform(HYBRID)
    expected["params"]["children"][0]["params"]["sublinear_tf"] = True
    assert point.config == expected


@pytest.mark.parametrize(
    "spec, message",
    [
        ("params.children[0].params.k1=1", "no parameter 'k1'"),
        ("params.children[5].params.top_k=1", "has 2 elements"),
        ("params.weights[0]=1", "is null"),
        ("params.children[0]=1", "names a component"),
        ("params.children=1", "is a list"),
        ("params.rrf_k=-1", "value -1 is refused"),
        ("params.rrf_k=abc", "value 'abc' is refused"),
        ("params.merge_strategy=rrf,mean", "value 'mean' is refused"),
    ],
)
def test_a_bad_path_or_value_is_named(spec, message):
    with pytest.raises(ConfigError) as error:
        plan_grid(HYBRID, [parse_param(spec)], top_k=0)
    assert spec.partition("=")[0] in str(error.value) and message in str(error.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(ConfigError) as error:
        plan_grid(HYBRID, [parse_param("params.nope=1"), parse_param("params.rrf_k=-5")])
    assert len(error.value.issues) == 2


def test_a_value_is_judged_with_the_values_it_runs_with():
    ngram = "params.vectorizer.params.ngram_{}"
    points = plan_grid(tfidf(), [parse_param(ngram.format("max") + "=2,3"), parse_param(ngram.format("min") + "=1,2")])
    assert len(points) == 4  # ngram_min=2 is refused beside the default ngram_max=1, not beside 2 or 3


def test_a_combination_that_breaks_a_rule_is_named():
    ngram = "params.vectorizer.params.ngram_{}"
    with pytest.raises(ConfigError, match="combination"):
        plan_grid(tfidf(), [parse_param(ngram.format("max") + "=1,3"), parse_param(ngram.format("min") + "=1,2")])


def test_tuning_top_k_under_a_top_k_hint_is_refused():
    with pytest.raises(ConfigError, match="--top-k 0"):
        plan_grid(HYBRID, [parse_param("params.children[0].params.top_k=5,10")], top_k=100)


def test_ties_go_to_the_first_point_in_grid_order():
    points = [GridPoint({}, {}, {"m": 0.5}), GridPoint({}, {}, {"m": 0.7}), GridPoint({}, {}, {"m": 0.7})]
    assert best_index(points, "m") == 1


@pytest.mark.slow
def test_query_time_parameters_refit_nothing_below_the_fusion(infra):
    cache = SubtreeCache(infra)
    for point in plan_grid(HYBRID, [parse_param(f"{RRF_K}=1,10,60")]):
        cache.build(point.config)
    assert cache.fitted.count("TFIDFRetriever") == 2 and cache.fitted.count("ParallelRetriever") == 3


def test_a_leaf_parameter_refits_that_leaf_only(infra):
    cache = SubtreeCache(infra)
    for point in plan_grid(HYBRID, [parse_param(f"{SUBLINEAR}=false,true"), parse_param(f"{RRF_K}=1,60")]):
        cache.build(point.config)
    assert cache.fitted.count("TFIDFRetriever") == 3  # child 0 twice, child 1 once


def test_bm25_k1_and_b_refit_the_bm25_leaf_alone(infra):
    keyword_hybrid = {
        "component": "ParallelRetriever",
        "params": {"children": [{"component": "BM25Retriever"}, tfidf()], "merge_strategy": "rrf"},
    }
    cache = SubtreeCache(infra)
    grid = [
        parse_param("params.children[0].params.k1=0.9,1.5"),
        parse_param("params.children[0].params.b=0.4,0.75"),
        parse_param(f"{RRF_K}=10,60"),
    ]
    for point in plan_grid(keyword_hybrid, grid):
        cache.build(point.config)
    assert cache.fitted.count("BM25Retriever") == 4 and cache.fitted.count("TFIDFRetriever") == 1


def test_only_the_children_a_later_point_reuses_are_remembered_never_a_root():
    grid = [parse_param(f"{SUBLINEAR}=false,true"), parse_param(f"{RRF_K}=1,60")]
    configs = [p.config for p in plan_grid(HYBRID, grid)]
    reuse = Reuse(configs)
    roots = {json.dumps(c, sort_keys=True) for c in configs}  # a root's key is its whole (normalised) config
    assert roots <= set().union(*reuse.keys)
    assert len(reuse.shared) == 3  # child 1 everywhere; child 0 once per sublinear value
    assert not reuse.shared & roots
    assert [len(reuse.finished(i) & reuse.shared) for i in range(4)] == [0, 1, 0, 2]


def test_the_cache_holds_no_answers_after_the_last_point_that_reads_them(infra, scifact_subset):
    queries = dict(list(load_split(scifact_subset, "train").queries.items())[:5])
    configs = [p.config for p in plan_grid(HYBRID, [parse_param(f"{RRF_K}=1,60")])]
    reuse, cache = Reuse(configs), SubtreeCache(infra)
    cache.remember(reuse.shared)
    held = []
    for index, config in enumerate(configs):
        run_queries(cache.build(config), queries)
        held.append(cache.remembered_answers)
        cache.forget(reuse.finished(index))
    assert held == [2, 2] and cache.remembered_answers == 0  # both children's batch, the roots' never
    cache.close()


@pytest.mark.slow
def test_a_cached_tree_answers_what_a_fresh_tree_answers(infra, scifact_subset):
    queries = load_split(scifact_subset, "train").queries
    cache = SubtreeCache(infra)
    first, second = (p.config for p in plan_grid(HYBRID, [parse_param(f"{RRF_K}=1,60")]))
    cache.build(first)
    cached = run_queries(cache.build(second), queries)
    fresh = run_queries(fitted(second, infra), queries)
    assert [n["output"] for _, n in cached.traces] == [n["output"] for _, n in fresh.traces]


@pytest.mark.slow
def test_the_search_finds_the_best_point_of_direct_evaluation(tuned, infra, scifact_subset):
    train = load_split(scifact_subset, "train")
    evaluator = Evaluator(train.qrels, "ndcg@10")
    direct = [
        evaluator.evaluate(root_run(run_queries(fitted(p.config, infra), train.queries).traces)).mean["ndcg@10"]
        for p in tuned.points
    ]
    assert [p.train["ndcg@10"] for p in tuned.points] == direct
    assert tuned.best == direct.index(max(direct))


def test_the_grid_points_do_not_all_score_alike(tuned):
    assert len({p.train["ndcg@10"] for p in tuned.points}) > 1


def test_the_best_and_the_untuned_tree_are_scored_on_test(tuned, infra, scifact_subset):
    test = load_split(scifact_subset, "test")
    evaluator = Evaluator(test.qrels, "ndcg@10,recall@100")
    for config, report in ((tuned.best_point.config, tuned.test), (HYBRID_WEIGHTED, tuned.baseline_test)):
        assert report["split"] == "test"
        assert (
            report["metrics"]
            == evaluator.evaluate(root_run(run_queries(fitted(config, infra), test.queries).traces)).mean
        )


def test_the_tuned_config_validates_as_it_is(tuned):
    assert dashrag.validate_and_transform(tuned.best_point.config) == tuned.best_point.config


def test_the_tuning_plot_is_a_png(tuned, tmp_path):
    path = plot_tuning(tuned, tmp_path / "tuning.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
