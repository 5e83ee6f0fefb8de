"""Judged pairs, the seeded dev slice and the test-split guard (pure functions on real SciFact judgements)."""

from __future__ import annotations

import pytest

from dashrag.errors import ConfigError, CorpusError
from dashrag.evaluation.beir import EvaluationSplit, load_split
from dashrag.finetuning.pairs import carve_dev, judged_pairs, refuse_test_split


@pytest.fixture(scope="module")
def train(scifact_dir) -> EvaluationSplit:
    return load_split(scifact_dir, "train")


def test_the_dev_slice_is_disjoint_from_the_fit_queries_and_covers_the_split(train):
    fit, dev = carve_dev(train, 0.1, seed=42)
    assert dev is not None
    assert not set(fit.queries) & set(dev.queries)
    assert set(fit.queries) | set(dev.queries) == set(train.queries)
    assert len(dev) == round(len(train) * 0.1)


def test_the_same_seed_holds_out_the_same_queries_and_another_seed_others(train):
    assert list(carve_dev(train, 0.1, 42)[1].queries) == list(carve_dev(train, 0.1, 42)[1].queries)
    assert set(carve_dev(train, 0.1, 42)[1].queries) != set(carve_dev(train, 0.1, 7)[1].queries)


def test_no_dev_fraction_trains_on_the_whole_split(train):
    fit, dev = carve_dev(train, 0.0, 42)
    assert fit is train and dev is None


@pytest.mark.parametrize("fraction", [-0.1, 1.0, 0.0001])
def test_a_fraction_that_leaves_one_side_empty_is_refused(train, fraction):
    with pytest.raises(ConfigError, match="--dev-fraction"):
        carve_dev(train, fraction, 42)


def test_pairs_are_the_relevant_judgements_whose_document_exists():
    split = EvaluationSplit("d", "train", {"q1": "a", "q2": "b"},
                            {"q1": {"d1": 1, "d2": 0, "gone": 2}, "q2": {"d2": 2}})
    pairs = judged_pairs(split, {"d1": "one", "d2": "two"})
    assert [(p.query_id, p.document_id, p.document) for p in pairs] == [("q1", "d1", "one"), ("q2", "d2", "two")]


def test_a_split_with_no_relevant_pair_in_the_corpus_is_a_clear_error():
    split = EvaluationSplit("d", "train", {"q1": "a"}, {"q1": {"elsewhere": 1}})
    with pytest.raises(CorpusError, match="'train'.*nothing to train on"):
        judged_pairs(split, {"d1": "one"})


@pytest.mark.parametrize("split", ["test", "TEST", " test"])
def test_the_test_split_is_refused_unless_forced(split):
    with pytest.raises(ConfigError, match="--split: is the 'test' split"):
        refuse_test_split(split, force=False)
    refuse_test_split(split, force=True)
