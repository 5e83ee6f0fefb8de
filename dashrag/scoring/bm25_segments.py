"""BM25 postings as segments: a base whose postings never change, the postings of the rows added since.

Why: with the weights derived at query time (``bm25_query_time.py``) a posting holds only what the corpus's
statistics never move (``u``, ``x``, or ``f``, ``dl``), so the postings of the rows an add brings are the only new
ones: the base's (a million chunks, ~1 GB) are kept as they were built, memory-mapped, and saved once by content
address (docs/scale.md, "Segments of the keyword index"). The state's statistics come from both: ``N`` the rows of
both, each term's ``df`` the sum of its two posting lists' lengths, ``avgdl`` the sum of both length arrays over
``N``, then idf, Okapi's mean idf and BM25+'s constants by :func:`bm25_query_time.per_term_statistics`, as for
one segment: O(vocabulary + chunks) per state, nothing per posting.

A query term's postings are the base's then the delta's (whose rows come after every base row), so a chunk's score
adds the same float32 values in the same order as a tree built on the same chunks: exact, not within a tolerance.
Rows removed since the base stay where they are, as tombstones (``bm25_tombstones.py``): the statistics leave them
out, a query's postings skip them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Sequence

import numpy as np

from dashrag.documents.chunk_set import rows_outside
from dashrag.scoring.bm25 import WEIGHT_DTYPE, BM25Parameters, BM25Weights
from dashrag.scoring.bm25_query_time import QueryTimeWeights, per_term_statistics, query_time_weights
from dashrag.scoring.bm25_tombstones import TombstonedWeights, Tombstones

if TYPE_CHECKING:
    import scipy.sparse as sp

LAYOUT = "segments"  # weights.json's "layout" of a node saved as segments


@dataclass(frozen=True)
class PostingSegment:
    """Term-major postings of some consecutive rows (``doc_ids`` already the rows' numbers in the whole corpus):
    the variant's per-posting ``first`` and ``second`` arrays, and each of those rows' lengths."""

    ARRAYS: ClassVar[tuple[str, ...]] = ("first", "second", "doc_ids", "term_ptr", "lengths")

    first: np.ndarray
    second: np.ndarray
    doc_ids: np.ndarray
    term_ptr: np.ndarray
    lengths: np.ndarray  # float32, one per row of the segment
    length_sum: float = field(default=-1.0)  # float64 sum of ``lengths`` (computed once, not per state)

    def __post_init__(self) -> None:
        if self.length_sum < 0:
            object.__setattr__(self, "length_sum", float(self.lengths.sum(dtype=np.float64)))

    @property
    def n_rows(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.term_ptr.shape[0] - 1)

    @classmethod
    def of_counts(cls, counts: sp.csr_matrix, params: BM25Parameters, first_row: int) -> PostingSegment:
        """The postings of the rows ``counts`` (numbered from ``first_row`` in the corpus), made as
        :func:`bm25_query_time.query_time_weights` makes them (in blocks: the peak stays near the postings' size)."""
        made = query_time_weights(counts, params)
        doc_ids = made.doc_ids if first_row == 0 else (made.doc_ids + np.int32(first_row)).astype(np.int32)
        return cls(made.first, made.second, doc_ids, made.term_ptr, made.lengths)

    @classmethod
    def of_weights(cls, weights: QueryTimeWeights) -> PostingSegment:
        return cls(weights.first, weights.second, weights.doc_ids, weights.term_ptr, weights.lengths)

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in self.ARRAYS}


def segment_weights(base: PostingSegment, delta: PostingSegment | None, params: BM25Parameters,
                    tombstones: Tombstones | None = None) -> QueryTimeWeights | SegmentedWeights | TombstonedWeights:
    """What the node scores with: the base's postings alone (no delta: exactly a :class:`QueryTimeWeights`, nothing
    added to a query's cost), or both segments with the statistics of their union; with ``tombstones``, those
    stored rows left out of the statistics and of every query's postings."""
    n_columns = base.n_columns if delta is None else delta.n_columns
    df = np.zeros(n_columns, dtype=np.int64)
    df[: base.n_columns] = np.diff(base.term_ptr)
    stored, length_sum = base.n_rows, base.length_sum
    if delta is not None:
        df += np.diff(delta.term_ptr)
        stored, length_sum = stored + delta.n_rows, length_sum + delta.length_sum
    n_docs = stored
    if tombstones is not None:
        df -= tombstones.df
        n_docs -= int(tombstones.rows.shape[0])
        length_sum -= _lengths_of(base, delta, tombstones.rows)
    avgdl = length_sum / n_docs if n_docs else 0.0
    scale, constant = per_term_statistics(params, df, n_docs)

    def weights_of(segment: PostingSegment) -> QueryTimeWeights:
        return QueryTimeWeights(first=segment.first, second=segment.second, doc_ids=segment.doc_ids,
                                term_ptr=segment.term_ptr, lengths=segment.lengths, scale=scale,
                                nonoccurrence=constant, avgdl=avgdl, n_docs=stored, params=params)

    weights = weights_of(base) if delta is None else SegmentedWeights(weights_of(base), weights_of(delta))
    if tombstones is None:
        return weights
    return TombstonedWeights(weights, rows_outside(tombstones.rows, stored))


def _lengths_of(base: PostingSegment, delta: PostingSegment | None, rows: np.ndarray) -> float:
    """The float64 sum of the lengths of the stored ``rows`` (ascending): what tombstones take out of ``avgdl``."""
    split = int(np.searchsorted(rows, base.n_rows))
    total = float(base.lengths[rows[:split]].sum(dtype=np.float64))
    if delta is not None:
        total += float(delta.lengths[rows[split:] - base.n_rows].sum(dtype=np.float64))
    return total


@dataclass(frozen=True)
class SegmentedWeights:
    """Query-time weights of two segments sharing one state's statistics (``base`` then ``delta``); scores as
    :class:`QueryTimeWeights` does, each query term's postings being the base's then the delta's."""

    base: QueryTimeWeights
    delta: QueryTimeWeights

    @property
    def n_docs(self) -> int:
        return self.delta.n_docs

    @property
    def params(self) -> BM25Parameters:
        return self.delta.params

    @property
    def nonoccurrence(self) -> np.ndarray:
        return self.delta.nonoccurrence

    @property
    def vocab_size(self) -> int:
        return self.delta.vocab_size

    @property
    def avgdl(self) -> float:
        return self.delta.avgdl

    def posting_parts(self, term: int, count: float) -> Sequence[tuple[np.ndarray, np.ndarray]]:
        """The base's part (none for a term the base never had), then the delta's (none when empty): side by side,
        not concatenated, so a query never copies a base list (a delta's rows are numbered after the base's)."""
        parts = [self.base.postings(term, count)] if term < self.base.vocab_size else []
        ids, values = self.delta.postings(term, count)
        return parts + [(ids, values)] if ids.shape[0] else parts

    @cached_property
    def merged(self) -> QueryTimeWeights:
        """Both segments as one set of postings (O(postings), once): what a filter's own postings and the
        whole-vector distances are cut from."""
        import scipy.sparse as sp

        base, delta = self.base, self.delta
        base_ptr = np.concatenate([base.term_ptr, np.full(delta.vocab_size - base.vocab_size, base.term_ptr[-1])])
        shape = (delta.vocab_size, self.n_docs)
        # a posting's position, +1-based for the base's and negative for the delta's: rows never collide
        where = (sp.csr_matrix((np.arange(1, base.doc_ids.shape[0] + 1, dtype=np.float64), base.doc_ids, base_ptr),
                               shape=shape)
                 + sp.csr_matrix((-np.arange(1, delta.doc_ids.shape[0] + 1, dtype=np.float64), delta.doc_ids,
                                  delta.term_ptr), shape=shape))
        where.sort_indices()
        position = where.data.astype(np.int64)
        in_base = position > 0
        picked = {}
        for name in ("first", "second"):
            values = np.empty(position.shape[0], dtype=WEIGHT_DTYPE)
            values[in_base] = getattr(base, name)[position[in_base] - 1]
            values[~in_base] = getattr(delta, name)[-position[~in_base] - 1]
            picked[name] = values
        return replace(delta, first=picked["first"], second=picked["second"],
                       doc_ids=where.indices.astype(np.int32), term_ptr=where.indptr.astype(np.int64),
                       lengths=np.concatenate([base.lengths, delta.lengths]))

    def restricted(self, rows: np.ndarray) -> QueryTimeWeights:
        return self.merged.restricted(rows)

    def eager(self) -> BM25Weights:
        return self.merged.eager()

    def without_absent_constant(self) -> SegmentedWeights:
        zero = np.zeros_like(self.nonoccurrence)
        return SegmentedWeights(replace(self.base, nonoccurrence=zero), replace(self.delta, nonoccurrence=zero))

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The two segments' arrays (their sizes: what a filter's own postings are held against)."""
        return {**{f"base_{k}": v for k, v in PostingSegment.of_weights(self.base).arrays().items()},
                **{f"delta_{k}": v for k, v in PostingSegment.of_weights(self.delta).arrays().items()}}

    def meta(self) -> dict:
        return {**self.delta.meta(), "layout": LAYOUT}

