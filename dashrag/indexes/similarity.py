"""Similarity of query vectors to chunk vectors: small pure functions, shared by every vector index.

Scores are higher-is-better under every metric (cosine, dot, negated euclidean
distance), so an engine's native distance is converted to the same number before it
leaves its index: the same tree ranks the same way in-process and on an engine.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

Metric = Literal["cosine", "dot", "euclidean", "manhattan"]
UNIT_TOLERANCE = 1e-4  # |norm - 1| below this for every row: the matrix is treated as unit length


def is_unit_length(norms: np.ndarray) -> bool:
    return bool(norms.size == 0 or np.max(np.abs(norms - 1.0)) <= UNIT_TOLERANCE)


def similarity(queries: np.ndarray, matrix: np.ndarray, norms: np.ndarray, metric: str,
               unit_length: bool) -> np.ndarray:
    """(n_queries, n_rows) scores, higher is better, of ``queries`` against ``matrix`` rows.

    ``norms`` are the rows' L2 norms; ``unit_length`` says they are all 1 (then
    cosine is the plain product and nothing is divided).
    """
    if metric == "euclidean":
        return euclidean_from_ranking(euclidean_ranking(queries, matrix, norms), squared_lengths(queries))
    queries = np.asarray(queries, dtype=np.float32)
    if metric == "dot":
        return queries @ matrix.T
    if metric == "cosine":
        q_norms = np.linalg.norm(queries, axis=1, keepdims=True)
        products = (queries / np.where(q_norms > 0, q_norms, 1)).astype(np.float32) @ matrix.T
        if not unit_length:
            products *= np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1), 0).astype(np.float32)
        return products
    if metric == "manhattan":
        return -np.stack([np.abs(matrix - q[None, :]).sum(axis=1) for q in queries]) if len(queries) \
            else np.zeros((0, matrix.shape[0]), dtype=np.float32)
    raise ValueError(f"unknown similarity metric {metric!r}")


def squared_lengths(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return np.einsum("ij,ij->i", vectors, vectors)


def euclidean_ranking(queries: np.ndarray, matrix: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """``2 q·d − |d|²``: per query, the same order as −distance (``|q|²`` is constant along a row),
    one product and one subtraction, no square root over the whole matrix."""
    ranking = np.asarray(queries, dtype=np.float32) @ matrix.T
    ranking *= 2
    ranking -= (norms.astype(np.float32) ** 2)[None, :]
    return ranking


def euclidean_from_ranking(ranking: np.ndarray, query_squared_lengths: np.ndarray) -> np.ndarray:
    """−distance from ``euclidean_ranking`` values: −sqrt(|q|² − (2 q·d − |d|²)), clipped at 0."""
    squared = np.asarray(query_squared_lengths, dtype=np.float32).reshape(-1, *([1] * (ranking.ndim - 1))) - ranking
    return -np.sqrt(np.maximum(squared, 0))


def distance_from_similarity(scores: np.ndarray, metric: str) -> np.ndarray:
    """cosine → 1 − cos; dot → −dot; euclidean and manhattan → the distance itself."""
    if metric == "cosine":
        return 1.0 - scores
    return -scores
