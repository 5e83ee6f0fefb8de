import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.core.ranking import top_k_above, top_k_rows

scores_st = st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, float("-inf"), float("inf"), float("nan")])
                     | st.floats(-5, 5), min_size=0, max_size=40)


@settings(max_examples=400, deadline=None)
@given(scores_st, st.integers(0, 45), st.data())
def test_top_k_equals_a_stable_full_sort_of_the_allowed_finite_rows(scores, k, data):
    scores = np.asarray(scores, dtype=np.float64)
    allowed = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(scores), max_size=len(scores))), dtype=bool)
    kept = [i for i in range(len(scores)) if allowed[i] and np.isfinite(scores[i])]
    expected = sorted(kept, key=lambda i: (-scores[i], i))[:k]
    assert top_k_rows(scores, k, allowed).tolist() == expected


def test_restriction_still_returns_k_when_k_allowed_rows_exist():
    scores = np.arange(10, dtype=float)  # the best rows are 9, 8, ...
    allowed = np.zeros(10, dtype=bool)
    allowed[:4] = True
    assert top_k_rows(scores, 3, allowed).tolist() == [3, 2, 1]


@settings(max_examples=400, deadline=None)
@given(scores_st, st.integers(0, 45), st.sampled_from([0.0, 0.5, -1.0, float("-inf")]), st.booleans(), st.data())
def test_the_k_best_above_a_floor_are_the_k_best_cut_at_the_floor(scores, k, floor, restricted, data):
    """A leaf's hits (rows above its floor, ties to the lower row) whether few rows or most are above the floor."""
    scores = np.asarray(scores, dtype=np.float64)
    allowed = None
    if restricted:
        allowed = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(scores), max_size=len(scores))),
                             dtype=bool)
    every = top_k_rows(scores, k, allowed)
    above = top_k_above(scores, k, floor, allowed)
    assert [i for i in above.tolist() if scores[i] > floor] == [i for i in every.tolist() if scores[i] > floor]
