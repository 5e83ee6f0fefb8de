"""DashAI's similarity functions: whole-vector distances between a query's vector and each document's.

DashAI's sparse retrievers (BM25, TF-IDF) rank by scikit-learn's ``pairwise_distances`` between
the query's vector and every chunk's, under one of six metric names (``l1``, ``cityblock`` and
``manhattan`` are one metric; ``l2`` and ``euclidean`` another). dashrag keeps its scores
"higher is better" as ``1 - distance``: for ``cosine`` that is the cosine itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:  # scipy is imported where a sparse matrix is made: a lone query needs none
    import scipy.sparse as sp

DistanceMetric = Literal["cosine", "cityblock", "euclidean", "l1", "l2", "manhattan"]
DISTANCE_METRICS: tuple[str, ...] = ("cosine", "cityblock", "euclidean", "l1", "l2", "manhattan")


def distances(queries: sp.spmatrix, documents: sp.spmatrix, metric: str) -> np.ndarray:
    """``(n_queries, n_documents)`` distances under ``metric``, as DashAI computes them (scikit-learn)."""
    from sklearn.metrics import pairwise_distances

    return np.asarray(pairwise_distances(queries, documents, metric=metric), dtype=np.float64)


def scores_from_distances(d: np.ndarray) -> np.ndarray:
    """``1 - distance``: higher is better, and the cosine itself for the cosine distance."""
    return 1.0 - d
