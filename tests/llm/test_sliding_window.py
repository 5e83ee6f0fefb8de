"""Sliding windows over a candidate list: every candidate judged, choices carried to the top."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.errors import ConfigError, SelectionError
from dashrag.llm.sliding_window import check_window, sliding_window_select, window_starts


@pytest.mark.parametrize(
    "n, window, stride, expected",
    [
        (100, 20, 10, [80, 70, 60, 50, 40, 30, 20, 10, 0]),
        (25, 20, 10, [5, 0]),  # RankGPT would stop after 5 and never show 0..4 with the carried ones
        (20, 20, 10, [0]),
        (7, 20, 10, [0]),
        (10, 4, 3, [6, 3, 0]),
        (11, 4, 3, [7, 4, 1, 0]),
    ],
)
def test_window_starts_go_from_the_end_to_zero(n, window, stride, expected):
    assert window_starts(n, window, stride) == expected


def test_window_that_cannot_carry_top_k_is_a_config_error():
    with pytest.raises(ConfigError, match="top_k \\+ stride <= window"):
        check_window(window=10, stride=6, top_k=5)


@st.composite
def plans(draw):
    top_k = draw(st.integers(1, 5))
    stride = draw(st.integers(1, 6))
    window = draw(st.integers(top_k + stride, top_k + stride + 6))
    n = draw(st.integers(0, 40))
    hidden = draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=n, max_size=n, unique=True))
    return n, window, stride, top_k, hidden


def oracle(hidden: list[float], top_k: int):
    """A selector that knows each candidate's true relevance and picks the best of the window."""
    return lambda offered: sorted(offered, key=lambda i: -hidden[i])[:top_k]


@settings(max_examples=150)
@given(plans())
def test_every_candidate_is_seen_and_the_order_is_a_permutation(plan):
    n, window, stride, top_k, hidden = plan
    result = sliding_window_select(n, window, stride, top_k, oracle(hidden, top_k))
    assert {i for w in result.windows for i in w} == set(range(n))
    assert sorted(result.order) == list(range(n))
    assert all(len(w) == min(window, n) for w in result.windows)


@settings(max_examples=150)
@given(plans())
def test_selection_is_the_head_of_the_final_order(plan):
    n, window, stride, top_k, hidden = plan
    result = sliding_window_select(n, window, stride, top_k, oracle(hidden, top_k))
    assert result.order[: len(result.selected)] == result.selected
    assert len(result.selected) == min(top_k, n)


@pytest.mark.slow
@settings(max_examples=150)
@given(plans())
def test_an_oracle_selector_finds_the_global_top_k(plan):
    n, window, stride, top_k, hidden = plan
    result = sliding_window_select(n, window, stride, top_k, oracle(hidden, top_k))
    assert list(result.selected) == sorted(range(n), key=lambda i: -hidden[i])[:top_k]


@settings(max_examples=200)
@given(plans(), st.randoms(use_true_random=False))
def test_any_valid_selector_yields_a_selection_of_its_last_window(plan, rnd):
    n, window, stride, top_k, _ = plan

    def arbitrary(offered):
        return rnd.sample(list(offered), rnd.randint(1, min(top_k, len(offered))))

    result = sliding_window_select(n, window, stride, top_k, arbitrary)
    if n:
        assert set(result.selected) <= set(result.windows[-1])
    else:
        assert result.selected == () and result.windows == ()
    assert sorted(result.order) == list(range(n))


def test_a_selector_naming_a_candidate_outside_its_window_is_refused():
    with pytest.raises(SelectionError, match="distinct candidates of its window"):
        sliding_window_select(30, 10, 5, 3, lambda offered: [offered[0], 999])


def test_windows_are_judged_from_the_back_of_the_list():
    result = sliding_window_select(10, 4, 3, 1, lambda offered: [offered[-1]])
    assert result.windows[0] == (6, 7, 8, 9)
