"""InMemoryVectorIndex: exact search over a float32 matrix in this process (the default).

Search is one float32 matrix product of a block of query vectors against the
chunk matrix, then partial top-k selection (``top_k_rows``: the one selection every
leaf shares, same order, same tie rule) with the restriction applied as a mask
before it; a restriction that keeps under half the rows is scored on its rows alone
(a filtered query then costs less than an unfiltered one, bench/bench_filters.py).
For euclidean the selection runs on ``2 q·d − |d|²`` (same order as the negated
distance) and the square root is taken for the k kept only.

Cosine on a matrix of unit vectors (what a normalising model gives) is the plain
product; otherwise the scores are divided by the stored norms, the matrix itself is
never rewritten. A saved folder holds ``vectors.npy`` and ``norms.npy`` (the layout
dense nodes had before indexes were components, so older folders still load);
loading memory-maps the vectors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dashrag.core.params import NoParams
from dashrag.core.persistence import load_array, save_array
from dashrag.core.ranking import SCORE_KEPT_ROWS_BELOW, top_k_rows
from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.errors import PersistenceError, RetrievalError
from dashrag.indexes.base import Hits, IndexIdentity, VectorIndex
from dashrag.indexes.similarity import (
    euclidean_from_ranking,
    euclidean_ranking,
    is_unit_length,
    similarity,
    squared_lengths,
)

QUERY_BLOCK = 256  # queries scored per matrix product


@register(kind="vector_index", icon="Cpu", category="index",
          en=("In-process vectors", "Exact search over the chunk vectors held in this process (numpy)."),
          es=("Vectores en proceso", "Búsqueda exacta sobre los vectores de los fragmentos en este proceso (numpy)."),
          representation="in-process exact")
class InMemoryVectorIndex(VectorIndex[NoParams]):
    def __init__(self, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._vectors: np.ndarray | None = None
        self._norms: np.ndarray = np.zeros(0, dtype=np.float32)
        self._unit_length = False
        self._metric = "cosine"

    # -- holding vectors -------------------------------------------------------
    def add(self, vectors: np.ndarray, identity: IndexIdentity, norms: np.ndarray | None = None) -> None:
        self._vectors = vectors
        self._norms = np.linalg.norm(vectors, axis=1).astype(np.float32) if norms is None else norms
        self._unit_length = is_unit_length(self._norms)
        self._metric = identity.metric

    @property
    def matrix(self) -> np.ndarray:
        if self._vectors is None:
            raise RetrievalError(f"{self.component_name}: holds no vectors yet (the dense node is not fitted)")
        return self._vectors

    @property
    def norms(self) -> np.ndarray:
        return self._norms

    @property
    def unit_length(self) -> bool:
        return self._unit_length

    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[1])

    def vectors_for(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.matrix[rows])

    def score_all(self, query_vectors: np.ndarray) -> np.ndarray:
        """(n_queries, n_chunks) scores under the node's metric."""
        return similarity(query_vectors, self.matrix, self._norms, self._metric, self._unit_length)

    # -- search ----------------------------------------------------------------
    def search(self, query_vectors: np.ndarray, k: int, restriction: Restriction | None) -> list[Hits]:
        allowed = None if restriction is None else restriction.row_mask(self.require_infra().chunks)
        matrix, norms, mask, kept = self._rows_to_score(allowed)
        euclidean = self._metric == "euclidean"
        hits: list[Hits] = []
        for start in range(0, len(query_vectors), QUERY_BLOCK):
            block = query_vectors[start:start + QUERY_BLOCK]
            ranking = euclidean_ranking(block, matrix, norms) if euclidean \
                else similarity(block, matrix, norms, self._metric, self._unit_length)
            lengths = squared_lengths(block) if euclidean else None
            for i, row in enumerate(ranking):
                rows = top_k_rows(row, k, mask)
                scores = euclidean_from_ranking(row[rows], lengths[i]) if lengths is not None else row[rows]
                hits.append((rows if kept is None else kept[rows], scores))
        return hits

    def _rows_to_score(self, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                                                  np.ndarray | None]:
        """The matrix and norms to score, the mask the top-k still applies, and the chunk rows the scored
        rows stand for (None: all of them, in order)."""
        if allowed is None or np.count_nonzero(allowed) >= SCORE_KEPT_ROWS_BELOW * allowed.size:
            return self.matrix, self._norms, allowed, None
        kept = np.flatnonzero(allowed)  # ascending, so the lower-index tie rule holds
        return self.matrix[kept], self._norms[kept], None, kept

    # -- saved state -----------------------------------------------------------
    def save_into(self, folder: Path) -> None:
        save_array(folder / "vectors.npy", self.matrix)
        save_array(folder / "norms.npy", self._norms)

    def load_from(self, folder: Path, identity: IndexIdentity) -> None:
        vectors = np.asarray(load_array(folder / "vectors.npy", mmap=True))
        norms = load_array(folder / "norms.npy")
        if vectors.ndim != 2 or norms.shape != (vectors.shape[0],) or vectors.shape[1] != identity.dimension:
            raise PersistenceError(f"{folder}: vectors {vectors.shape}, norms {norms.shape} and the recorded "
                                   f"dimension {identity.dimension} do not match")
        self.add(vectors, identity, norms)
