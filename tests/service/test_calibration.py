"""retrieval_score calibration: cosine trees keep the cosine, other trees saturate with a per-tree constant."""

from __future__ import annotations

import pytest

import dashrag
from dashrag.service.calibration import (
    Calibration,
    calibrate_retriever,
    clip_cosine,
    is_cosine_tree,
    median_best,
    probe_queries,
    saturate,
)


def test_cosine_is_clipped_to_the_unit_interval():
    assert [clip_cosine(s) for s in (-0.4, 0.0, 0.37, 1.0000001)] == [0.0, 0.0, 0.37, 1.0]


def test_saturation_is_half_at_the_constant_zero_at_zero_and_monotone():
    assert saturate(2.5, 2.5) == 0.5 and saturate(0.0, 2.5) == 0.0 and saturate(-3, 2.5) == 0.0
    values = [saturate(s, 2.5) for s in (0.1, 1, 5, 50, 5000)]
    assert values == sorted(values) and all(0 < v < 1 for v in values)


def test_the_constant_is_the_median_of_positive_best_scores():
    assert median_best([0.0, 1.0, 3.0, 10.0]) == 3.0
    assert median_best([0.0, 0.0]) == 1.0


def test_which_trees_are_cosine_trees():
    assert is_cosine_tree({"component": "DenseEmbeddingRetriever", "params": {"similarity_metric": "cosine"}})
    assert not is_cosine_tree({"component": "DenseEmbeddingRetriever", "params": {"similarity_metric": "dot"}})
    assert is_cosine_tree({"component": "TFIDFRetriever", "params": {}})
    assert not is_cosine_tree({"component": "BM25Retriever", "params": {}})


def test_a_keyword_tree_gets_a_saturating_calibration_from_its_own_probes(trees_dir):
    tree = dashrag.load(trees_dir / "kw")
    probes = probe_queries(tree.require_infra().chunks)
    assert probes and probes == probe_queries(tree.require_infra().chunks)
    best = sorted(chunks[0].score for chunks, _ in tree.retrieve_batch(probes) if chunks)
    calibration = calibrate_retriever(tree)
    assert calibration.kind == "saturating"
    assert calibration.constant == pytest.approx(median_best(best))
    assert calibration(calibration.constant) == pytest.approx(0.5)


def test_a_calibration_maps_the_same_native_score_to_the_same_value_whatever_the_query():
    calibration = Calibration("saturating", 4.0)
    assert calibration(4.0) == calibration(4.0) == 0.5
