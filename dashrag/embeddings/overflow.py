"""What to do with a chunk longer than the model's input: the pure parts of ``window_average``.

A transformer reads at most ``max_seq_length`` tokens; ``truncate`` drops the
rest, so a long chunk is embedded by its beginning only. ``window_average``
splits the chunk's tokens into consecutive windows that each fit, embeds every
window, and averages the unit-length window vectors, so every part of the chunk
counts equally. Windows are cut on token boundaries and turned back into
character spans of the original text (from the tokenizer's offsets), so each
window is embedded from real text, never from decoded word pieces.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def window_spans(offsets: Sequence[tuple[int, int]], tokens_per_window: int) -> list[tuple[int, int]]:
    """Character spans covering consecutive groups of at most ``tokens_per_window`` tokens.

    ``offsets`` are the tokenizer's ``(start, end)`` per token (no special tokens).
    A text without tokens gets the one empty span ``(0, 0)``, so every text has a
    window and therefore a vector.
    """
    if tokens_per_window < 1:
        raise ValueError(f"tokens_per_window must be >= 1, got {tokens_per_window}")
    if len(offsets) == 0:
        return [(0, 0)]
    spans = []
    for first in range(0, len(offsets), tokens_per_window):
        last = min(first + tokens_per_window, len(offsets)) - 1
        spans.append((int(offsets[first][0]), int(offsets[last][1])))
    return spans


def average_by_owner(vectors: np.ndarray, owners: Sequence[int], count: int) -> np.ndarray:
    """Row ``i`` = mean of the rows of ``vectors`` whose owner is ``i`` (each owner has at least one)."""
    owner_of_row = np.asarray(owners, dtype=np.int64)
    sums = np.zeros((count, vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, owner_of_row, vectors)
    sizes = np.bincount(owner_of_row, minlength=count)
    if (sizes == 0).any():
        raise ValueError(f"owner(s) {np.flatnonzero(sizes == 0).tolist()} have no window")
    return (sums / sizes[:, None]).astype(np.float32)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1; an all-zero row stays zero."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
