"""Top-k by partial selection: the one ranking primitive every leaf shares."""

from __future__ import annotations

import numpy as np

EMPTY = np.empty(0, dtype=np.int64)


def top_k_rows(scores: np.ndarray, k: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ``k`` highest finite scores, best first; ties go to the lower index.

    ``allowed`` (boolean, same length) excludes rows *before* selection, so k rows
    come back wherever k allowed rows with finite scores exist. One
    ``argpartition`` finds the k-th best value; only the rows at or above it
    (every tie included) are sorted, so the cost stays linear in the row count.
    """
    scores = np.asarray(scores)
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return EMPTY
    keep = np.isfinite(scores) if allowed is None else np.isfinite(scores) & allowed
    masked = np.where(keep, scores, -np.inf)  # excluded, NaN and ±inf rows can never be selected
    kth = masked[np.argpartition(masked, n - k)[n - k:]].min() if n > k else -np.inf
    candidates = np.flatnonzero(masked >= kth) if np.isfinite(kth) else np.flatnonzero(keep)
    order = np.lexsort((candidates, -masked[candidates]))
    return candidates[order][:k]
