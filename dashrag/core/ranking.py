"""Top-k by partial selection: the one ranking primitive every leaf shares."""

from __future__ import annotations

import numpy as np


def top_k_rows(scores: np.ndarray, k: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ``k`` highest finite scores, best first; ties go to the lower index.

    ``allowed`` (boolean, same length) excludes rows *before* selection, so k rows
    come back wherever k allowed rows with finite scores exist.
    """
    scores = np.asarray(scores)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    candidates = np.flatnonzero(np.isfinite(scores))
    if candidates.size == 0 or k <= 0:
        return np.empty(0, dtype=np.int64)
    if candidates.size > k:
        part = np.argpartition(-scores[candidates], k - 1)[:k]
        kth = scores[candidates[part]].min()
        # keep every row tied with the k-th score so the tie-break below is by index
        candidates = candidates[scores[candidates] >= kth]
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k]
