"""The pure parts of window_average: token windows → character spans, averaging, unit rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashrag.embeddings.overflow import average_by_owner, unit_rows, window_spans


def test_window_spans_cut_every_n_tokens_into_character_spans():
    offsets = [(0, 3), (4, 7), (8, 11), (12, 15), (16, 19)]
    assert window_spans(offsets, 2) == [(0, 7), (8, 15), (16, 19)]


def test_a_text_without_tokens_gets_one_empty_window():
    assert window_spans([], 8) == [(0, 0)]


def test_a_window_size_below_one_is_refused():
    with pytest.raises(ValueError):
        window_spans([(0, 1)], 0)


@given(st.lists(st.integers(1, 6), min_size=1, max_size=60), st.integers(1, 12))
def test_windows_cover_every_token_once_in_order(token_lengths, size):
    offsets, position = [], 0
    for length in token_lengths:
        offsets.append((position, position + length))
        position += length + 1
    spans = window_spans(offsets, size)
    assert len(spans) == -(-len(offsets) // size)
    expected = [(offsets[i][0], offsets[min(i + size, len(offsets)) - 1][1]) for i in range(0, len(offsets), size)]
    assert spans == expected


def test_average_by_owner_is_the_mean_of_each_owners_rows():
    vectors = np.array([[1, 0], [0, 1], [2, 2], [4, 0]], dtype=np.float32)
    averaged = average_by_owner(vectors, [0, 0, 1, 1], 2)
    np.testing.assert_array_equal(averaged, np.array([[0.5, 0.5], [3, 1]], dtype=np.float32))


def test_an_owner_without_rows_is_an_error():
    with pytest.raises(ValueError, match="no window"):
        average_by_owner(np.ones((1, 2), np.float32), [1], 2)


def test_unit_rows_scales_to_length_one_and_keeps_zero_rows():
    rows = unit_rows(np.array([[3, 4], [0, 0]], dtype=np.float32))
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0, 0]], atol=1e-7)
