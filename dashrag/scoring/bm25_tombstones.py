"""BM25 postings with some stored rows removed: tombstones over a base and a delta that stay as they were.

Why: a removal used to make every count and every posting again (the kept rows close up, so every ``doc_id``
moves): 19 s of a 1M-document tree's removal of 10 (docs/scale.md, "Removals by tombstone"). Here the postings keep
the rows where they are (``stored`` rows), and the rows removed since the base are **tombstones**: the state's
statistics leave them out exactly as a rebuild on the live rows computes them (``N`` the live rows, each term's
``df`` its posting lists' lengths less the tombstoned rows' own postings, ``avgdl`` the live rows' lengths over
``N``), and a query term's postings are mapped to the live numbering (live row ``i`` is the ``i``-th stored row not
tombstoned: the updated chunk set's order, ``documents/changes.py``), the tombstoned ones dropped. The mapping keeps
the postings' order, so a chunk's score adds the same float32 values in the same order as a rebuild: exact.

What it costs a query: per query term one gather of its postings' live numbers (``np.take``: half the time of
indexing); a tombstone's number is ``n_docs``, the score row's spare slot (``bm25.SPARE_SLOTS``), so its postings
are added there instead of being selected out (a selection per term cost more than the gather, docs/scale.md
"Queries after a removal"); nothing for a tree without tombstones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dashrag.scoring.bm25 import BM25Parameters, BM25Weights, PostingWeights

TOMBSTONE_ROWS = "tombstone_rows"  # the stored rows removed (int64, ascending): ``<name>.npy`` in the node's folder
TOMBSTONE_DF = "tombstone_df"  # per term, how many of them it occurs in (int64)


@dataclass(frozen=True)
class Tombstones:
    """The stored rows removed since the postings' base (ascending) and, per term, in how many of them it occurs:
    what :func:`bm25_segments.segment_weights` takes out of ``N``, ``df`` and the lengths' sum."""

    rows: np.ndarray
    df: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {TOMBSTONE_ROWS: self.rows, TOMBSTONE_DF: self.df}


@dataclass(frozen=True)
class TombstonedWeights:
    """Weights over the stored rows (``inner``: its statistics already the live rows') seen in the live numbering:
    scores as :class:`bm25.PostingWeights` do, over ``n_docs`` live rows."""

    inner: PostingWeights  # over every stored row (``inner.n_docs``), tombstoned ones included
    live: np.ndarray  # the stored rows not tombstoned, ascending (int64)

    @cached_property
    def live_number(self) -> np.ndarray:
        """Per stored row, its live number (a tombstone: ``n_docs``, the score row's spare slot). O(stored rows),
        once per state."""
        number = np.full(self.inner.n_docs, self.live.shape[0], dtype=np.int32)
        number[self.live] = np.arange(self.live.shape[0], dtype=np.int32)
        return number

    @property
    def n_docs(self) -> int:
        return int(self.live.shape[0])

    @property
    def params(self) -> BM25Parameters:
        return self.inner.params

    @property
    def nonoccurrence(self) -> np.ndarray:
        return self.inner.nonoccurrence

    @property
    def vocab_size(self) -> int:
        return self.inner.vocab_size

    def posting_parts(self, term: int, count: float) -> Sequence[tuple[np.ndarray, np.ndarray]]:
        """The inner parts in the live numbering, a tombstone's postings numbered ``n_docs`` (the score row's spare
        slot: they add nothing to a chunk's score)."""
        return [(np.take(self.live_number, stored), values) for stored, values in self.inner.posting_parts(term, count)]

    def restricted(self, rows: np.ndarray) -> PostingWeights:
        """The postings of the live rows ``rows`` alone, renumbered ``0..len(rows)-1`` (their stored rows' postings,
        the live statistics)."""
        return self.inner.restricted(self.live[rows])

    def eager(self) -> BM25Weights:
        return self.restricted(np.arange(self.n_docs)).eager()

    def without_absent_constant(self) -> TombstonedWeights:
        return TombstonedWeights(self.inner.without_absent_constant(), self.live)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return self.inner.to_arrays()

    def meta(self) -> dict:
        return {**self.inner.meta(), "n_docs": self.n_docs}

