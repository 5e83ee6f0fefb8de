"""InMemoryKeywordIndex: the BM25 weights as posting-list arrays in this process (the default).

The BM25 node scores with them itself (``scoring/bm25.py``: one scatter-add of each
query term's posting list, then the shared top-k selection), so results, speed and the
saved layout are those of BM25 nodes before indexes were components: ``data.npy``,
``doc_ids.npy``, ``term_ptr.npy``, ``nonoccurrence.npy`` and ``weights.json`` in the
node's folder, memory-mapped on load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dashrag.core.params import NoParams
from dashrag.core.persistence import atomic_write_json, load_array, load_json, save_array
from dashrag.core.registry import register
from dashrag.errors import PersistenceError, RetrievalError
from dashrag.indexes.base import IndexIdentity
from dashrag.indexes.keyword_base import KeywordIndex
from dashrag.scoring.bm25 import BM25Weights

STATE_ARRAYS = ("data", "doc_ids", "term_ptr", "nonoccurrence")


@register(kind="keyword_index", icon="Cpu", category="index",
          en=("In-process term weights", "BM25 posting lists held in this process (numpy), scored exactly."),
          es=("Pesos de términos en proceso",
              "Listas de BM25 en este proceso (numpy), con puntuación exacta."),
          representation="in-process BM25")
class InMemoryKeywordIndex(KeywordIndex[NoParams]):
    in_process = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._weights: BM25Weights | None = None

    def add(self, weights: BM25Weights, identity: IndexIdentity) -> None:
        self._weights = weights

    @property
    def weights(self) -> BM25Weights:
        if self._weights is None:
            raise RetrievalError(f"{self.component_name}: holds no weights yet (the BM25 node is not fitted)")
        return self._weights

    def save_into(self, folder: Path) -> None:
        for name, array in self.weights.to_arrays().items():
            save_array(folder / f"{name}.npy", array)
        atomic_write_json(folder / "weights.json", self.weights.meta())

    def load_from(self, folder: Path, identity: IndexIdentity) -> None:
        # memory-mapped (pages load on demand), seen as plain arrays: slicing an np.memmap runs Python code
        # per slice, which was a third of a loaded tree's batched query time (docs/performance.md)
        arrays = {name: np.asarray(load_array(folder / f"{name}.npy", mmap=True)) for name in STATE_ARRAYS}
        weights = BM25Weights.from_arrays(arrays, load_json(folder / "weights.json"))
        n_chunks = len(self.require_infra().chunks)
        if weights.n_docs != n_chunks:
            raise PersistenceError(f"{folder}: BM25 state covers {weights.n_docs} chunks, the corpus has {n_chunks}")
        if weights.vocab_size != identity.dimension:
            raise PersistenceError(f"{folder}: BM25 state and vocabulary disagree on the number of terms")
        self._weights = weights
