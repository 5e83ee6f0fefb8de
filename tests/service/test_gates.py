"""Steps 6, 7, 9: sorting, the floor and the confidence gate, and the missing-score rule."""

from __future__ import annotations

from dashrag.service.gates import at_least, sort_by


def score(item: tuple[str, float | None]) -> float | None:
    return item[1]


def test_a_score_equal_to_the_threshold_passes_and_one_just_below_does_not():
    items = [("a", 0.3), ("b", 0.29999999), ("c", 0.9)]
    assert at_least(items, score, 0.3) == [("a", 0.3), ("c", 0.9)]


def test_a_missing_score_counts_as_zero():
    items = [("a", None), ("b", 0.0), ("c", 0.1)]
    assert at_least(items, score, 0.05) == [("c", 0.1)]
    assert at_least(items, score, 0.0) == items


def test_sorting_is_descending_with_missing_last_among_positives_and_stable_for_ties():
    items = [("a", 0.2), ("b", None), ("c", 0.5), ("d", 0.2), ("e", -0.1)]
    assert [k for k, _ in sort_by(items, score)] == ["c", "a", "d", "b", "e"]
