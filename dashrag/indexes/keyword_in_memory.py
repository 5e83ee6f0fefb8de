"""InMemoryKeywordIndex: the BM25 postings as arrays in this process (the default).

The BM25 node scores with them itself (``scoring/bm25.py``: one scatter-add of each
query term's posting list, then the shared top-k selection). The postings hold what derives
the weights at query time (``scoring/bm25_query_time.py``: each posting's part that the corpus's
statistics never move, each chunk's length; the statistics once per state), so that an update
need not weigh every posting again (docs/scale.md, "Query-time weights"). Saved as
``first.npy``, ``second.npy``, ``doc_ids.npy``, ``term_ptr.npy``, ``lengths.npy`` and
``weights.json`` (``"layout": "query-time"``) in the node's folder, memory-mapped on load; a folder
saved with eager weights (``data.npy``, ``nonoccurrence.npy``, no layout) loads and scores as it did.

A selective filter gets posting lists of its own: the first query under a filter keeping fewer
than half the chunks cuts the postings down to its chunks (``scoring.restrict_weights``), and
later queries under it add only those (a 5% filter, a twentieth of the work; the same scores).
They are kept while the chunk set keeps the filter's mask (``filters/masks.py``), at most as many
bytes as the whole index, the least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dashrag.core.params import NoParams
from dashrag.core.persistence import atomic_write_json, load_array, load_json, save_array
from dashrag.core.ranking import SCORE_KEPT_ROWS_BELOW
from dashrag.core.registry import register
from dashrag.errors import PersistenceError, RetrievalError
from dashrag.indexes.base import IndexIdentity
from dashrag.indexes.keyword_base import KeywordIndex
from dashrag.scoring import bm25_query_time
from dashrag.scoring.bm25 import BM25Parameters, BM25Weights, PostingWeights

if TYPE_CHECKING:
    import scipy.sparse as sp

EAGER_ARRAYS = ("data", "doc_ids", "term_ptr", "nonoccurrence")
# weights.json's "layout" → how the saved arrays are read (folders saved before the query-time layout have none)
LAYOUTS: dict[str, tuple[tuple[str, ...], Any]] = {
    "eager": (EAGER_ARRAYS, BM25Weights.from_arrays),
    bm25_query_time.LAYOUT: (bm25_query_time.QueryTimeWeights.ARRAYS, bm25_query_time.QueryTimeWeights.from_arrays),
}
KEPT_MASKS = 64  # masks whose answer (their posting lists, or None) is remembered


@register(kind="keyword_index", icon="Cpu", category="index",
          en=("In-process term weights", "BM25 posting lists held in this process (numpy), scored exactly."),
          es=("Pesos de términos en proceso",
              "Listas de BM25 en este proceso (numpy), con puntuación exacta."),
          representation="in-process BM25")
class InMemoryKeywordIndex(KeywordIndex[NoParams]):
    in_process = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._weights: PostingWeights | None = None
        self._cut_down: OrderedDict[int, tuple[np.ndarray, tuple[np.ndarray, PostingWeights] | None]] = OrderedDict()
        self._lock = threading.Lock()  # a service answers from several threads

    def weigh(self, counts: sp.csr_matrix, params: BM25Parameters, identity: IndexIdentity) -> PostingWeights:
        weights = bm25_query_time.query_time_weights(counts, params)
        self._set(weights)
        return weights

    def add(self, weights: PostingWeights, identity: IndexIdentity) -> None:
        """Hold ``weights`` as they are (eager, or query-time)."""
        self._set(weights)

    def _set(self, weights: PostingWeights) -> None:
        with self._lock:
            self._weights = weights
            self._cut_down.clear()

    def postings_of(self, mask: np.ndarray) -> tuple[np.ndarray, PostingWeights] | None:
        """(the rows ``mask`` keeps, ascending; their posting lists alone) when it keeps fewer than
        ``SCORE_KEPT_ROWS_BELOW`` of the rows, else None. For a mask that lives across queries (a
        filter's: the chunk set keeps it), worked out on its first use and kept."""
        with self._lock:
            found = self._cut_down.get(id(mask))
            if found is not None and found[0] is mask:
                self._cut_down.move_to_end(id(mask))
                return found[1]
            weights = self.weights
        rows = np.flatnonzero(mask)
        cut = None if rows.size >= SCORE_KEPT_ROWS_BELOW * mask.size else (rows, weights.restricted(rows))
        with self._lock:
            if self._weights is weights:  # not replaced meanwhile
                self._cut_down[id(mask)] = (mask, cut)  # the mask held, so its id is not reused
                self._drop_beyond(_nbytes(weights))
        return cut

    def _drop_beyond(self, limit: int) -> None:
        """Forget the least recently used masks until the posting lists kept hold at most ``limit`` bytes
        and at most ``KEPT_MASKS`` masks are remembered."""
        def size(cut: tuple[np.ndarray, PostingWeights] | None) -> int:
            return 0 if cut is None else _nbytes(cut[1])

        held = sum(size(cut) for _, cut in self._cut_down.values())
        while self._cut_down and (held > limit or len(self._cut_down) > KEPT_MASKS):
            held -= size(self._cut_down.popitem(last=False)[1][1])

    @property
    def weights(self) -> PostingWeights:
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
        meta = load_json(folder / "weights.json")
        layout = meta.get("layout", "eager") if isinstance(meta, dict) else None
        if layout not in LAYOUTS:
            raise PersistenceError(f"{folder / 'weights.json'}: unknown layout {layout!r} of the BM25 state")
        names, read = LAYOUTS[layout]
        arrays = {name: np.asarray(load_array(folder / f"{name}.npy", mmap=True)) for name in names}
        weights = read(arrays, meta)
        n_chunks = len(self.require_infra().chunks)
        if weights.n_docs != n_chunks:
            raise PersistenceError(f"{folder}: BM25 state covers {weights.n_docs} chunks, the corpus has {n_chunks}")
        if weights.vocab_size != identity.dimension:
            raise PersistenceError(f"{folder}: BM25 state and vocabulary disagree on the number of terms")
        self._set(weights)


def _nbytes(weights: PostingWeights) -> int:
    """The bytes of the posting arrays (what a filter's own postings are measured against)."""
    return sum(array.nbytes for name, array in weights.to_arrays().items() if name != "term_ptr")
