"""Ranking primitives every retriever shares: top-k by partial selection, distance order, reranking."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dashrag.documents.model import ScoredChunk

EMPTY = np.empty(0, dtype=np.int64)
SCORE_KEPT_ROWS_BELOW = 0.5  # a restriction keeping fewer rows than this share is scored on those rows alone


def top_k_rows(scores: np.ndarray, k: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ``k`` highest finite scores, best first; ties go to the lower index.

    ``allowed`` (boolean, same length) excludes rows *before* selection, so k rows
    come back wherever k allowed rows with finite scores exist. One
    ``partition`` over the allowed rows finds the k-th best value; only the
    rows at or above it (every tie included) are sorted, so the cost stays linear
    in the row count and shrinks with a restriction.
    """
    scores = np.asarray(scores)
    if k <= 0 or scores.shape[0] == 0:
        return EMPTY
    keep = np.isfinite(scores) if allowed is None else np.isfinite(scores) & allowed
    # excluded, NaN and ±inf rows can never be selected; without any, skip the copy
    rows = None if keep.all() else np.flatnonzero(keep)
    values = scores if rows is None else scores[rows]
    n = values.shape[0]
    if n > k:
        kth = np.partition(values, n - k)[n - k]  # partition, not argpartition: no index array, 2x faster
        selected = np.flatnonzero(values >= kth)
    else:
        selected = np.arange(n)
    found = selected if rows is None else rows[selected]
    return found[np.lexsort((found, -values[selected]))][:k]


def top_k_above(scores: np.ndarray, k: int, floor: float, allowed: np.ndarray | None = None) -> np.ndarray:
    """The ``k`` best rows above ``floor`` (a leaf's hits), best first, ties to the lower row: :func:`top_k_rows`'s
    rows with those at or below ``floor`` left out (a broad query may still return them: its caller cuts them).

    Why: a keyword query matches a small share of the chunks (those sharing a term with it), and the selection's
    ``partition`` over every row was most of a lone query's time (docs/scale.md, "Query-time weights"); one
    comparison finds the rows above the floor, and when they are under half the rows only they are selected
    among. Ties still go to the lower row (the rows above stay ascending). A floor of -inf (every row a
    candidate) selects as :func:`top_k_rows` does.
    """
    scores = np.asarray(scores)
    if floor == -np.inf or k <= 0:
        return top_k_rows(scores, k, allowed)
    above = scores > floor
    if allowed is not None:
        above &= allowed
    if 2 * int(np.count_nonzero(above)) > scores.shape[0]:  # a broad query: every row, as before
        return top_k_rows(scores, k, allowed)
    rows = np.flatnonzero(above)
    return rows[top_k_rows(scores[rows], k)]


def by_distance(chunk_ids: Sequence[int], rows: np.ndarray, distances: np.ndarray) -> list[tuple[int, float]]:
    """``score_chunks``'s answer: ``[(chunk_id, distance)]`` ascending, ties in corpus (row) order."""
    ids = np.asarray(chunk_ids)
    return [(int(ids[i]), float(distances[i])) for i in np.lexsort((rows, distances))]


def rerank_by_scores(candidates: Sequence[ScoredChunk], scores: np.ndarray, k: int,
                     source: str) -> tuple[list[ScoredChunk], np.ndarray]:
    """The ``k`` best candidates by a reranker's ``scores`` (ties keep the child's order), rescored,
    each remembering its child rank and score; also the chosen candidates' indices."""
    order = np.lexsort((np.arange(len(candidates)), -np.asarray(scores)))[:k]
    chosen = [candidates[i].rescored(float(scores[i]), source, child_rank=int(i) + 1, child_score=candidates[i].score)
              for i in order]
    return chosen, order
