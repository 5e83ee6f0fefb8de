"""Per-child score normalisation: hand-computed values and the properties fusion relies on."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.fusion.normalise import distribution_normalise, min_max_normalise

FAST = settings(max_examples=60, deadline=None)
finite_scores = st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=12)


def test_min_max_maps_best_to_one_worst_to_zero_and_linearly_between():
    assert min_max_normalise([10.0, 6.0, 2.0]) == [1.0, 0.5, 0.0]


def test_min_max_of_all_equal_scores_is_one_even_when_negative():
    assert min_max_normalise([-3.0, -3.0]) == [1.0, 1.0]


def test_min_max_of_a_single_score_is_one():
    assert min_max_normalise([0.0]) == [1.0]


def test_both_normalisations_of_nothing_are_empty():
    assert min_max_normalise([]) == [] and distribution_normalise([]) == []


def test_min_max_does_not_overflow_at_the_float_limits():
    assert min_max_normalise([1.7e308, 0.0, -1.7e308]) == [1.0, 0.5, 0.0]


def test_distribution_maps_mean_to_half_and_sigma_to_a_sixth():
    # mean 6, population sigma sqrt(32/3); n = 1/2 + (s - mean) / (6 sigma)
    sigma = math.sqrt(32 / 3)
    assert distribution_normalise([10.0, 6.0, 2.0]) == pytest.approx(
        [0.5 + 4 / (6 * sigma), 0.5, 0.5 - 4 / (6 * sigma)], rel=1e-12)


def test_distribution_clips_a_score_beyond_three_sigma_to_one():
    # one 100 among ten 0: mean 100/11, sigma 100*sqrt(10)/11, so 100 sits at
    # 1/2 + sqrt(10)/6 = 1.027 before clipping and each 0 at 1/2 - 1/(6 sqrt(10)).
    normalised = distribution_normalise([100.0] + [0.0] * 10)
    assert normalised[0] == 1.0
    assert normalised[1:] == pytest.approx([0.5 - 1 / (6 * math.sqrt(10))] * 10, rel=1e-12)


def test_distribution_of_all_equal_scores_is_one():
    assert distribution_normalise([0.25, 0.25, 0.25]) == [1.0, 1.0, 1.0]


@FAST
@given(finite_scores)
def test_min_max_sends_the_largest_score_to_one_and_the_smallest_to_zero_or_all_to_one(scores):
    normalised = min_max_normalise(scores)
    assert normalised[scores.index(max(scores))] == 1.0
    expected_low = 1.0 if max(scores) == min(scores) else 0.0
    assert normalised[scores.index(min(scores))] == expected_low


@FAST
@given(finite_scores, st.sampled_from([min_max_normalise, distribution_normalise]))
def test_normalisation_stays_in_the_unit_interval(scores, normalise):
    assert all(0.0 <= value <= 1.0 for value in normalise(scores))


@FAST
@given(finite_scores, st.sampled_from([min_max_normalise, distribution_normalise]))
def test_normalisation_never_reverses_two_scores(scores, normalise):
    normalised = normalise(scores)
    for a, na in zip(scores, normalised):
        for b, nb in zip(scores, normalised):
            if a <= b:
                assert na <= nb


@FAST
@given(finite_scores, st.sampled_from([min_max_normalise, distribution_normalise]), st.randoms())
def test_normalisation_does_not_depend_on_the_order_of_the_list(scores, normalise, rnd):
    shuffled = list(range(len(scores)))
    rnd.shuffle(shuffled)
    normalised = normalise(scores)
    normalised_shuffled = normalise([scores[i] for i in shuffled])
    assert normalised_shuffled == [normalised[i] for i in shuffled]
