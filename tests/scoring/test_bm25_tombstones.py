"""BM25 postings with tombstoned rows (``scoring/bm25_tombstones.py``) against the postings made from the live rows'
counts alone (``query_time_weights``): every variant, random small corpora, tombstones in the base and the delta."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.scoring.bm25 import score_queries, score_query, top_k_batch
from dashrag.scoring.bm25_query_time import query_time_weights
from dashrag.scoring.bm25_segments import PostingSegment, segment_weights
from dashrag.scoring.bm25_tombstones import TombstonedWeights, Tombstones
from dashrag.scoring.count_segments import CountSegments, column_counts
from tests.scoring.test_bm25_segments import VARIANTS, random_counts

corpora = st.tuples(st.integers(0, 10_000), st.integers(4, 30), st.floats(0.2, 0.9), st.integers(0, 4))


def tombstoned(seed: int, rows: int, cut: float, variant: int):
    """(the weights of a base and a delta with about a third of the stored rows tombstoned, the postings made from
    the live rows alone, the live rows, the query counts)."""
    params = VARIANTS[variant]
    counts = random_counts(seed, rows, 10)
    base_rows = max(1, min(rows - 1, int(rows * cut)))
    rng = np.random.default_rng(seed)
    gone = np.flatnonzero(rng.random(rows) < 0.35)
    if gone.size == rows:
        gone = gone[1:]
    live = np.setdiff1d(np.arange(rows), gone)
    segments = CountSegments("lineage", sp.csr_matrix(counts[:base_rows]), sp.csr_matrix(counts[base_rows:]))
    base = PostingSegment.of_counts(segments.base, params, 0)
    delta = PostingSegment.of_counts(segments.rows_from(base_rows), params, base_rows)
    stones = Tombstones(gone.astype(np.int64), column_counts(sp.csr_matrix(counts[gone]), 10))
    got = segment_weights(base, delta, params, stones if gone.size else None)
    return got, query_time_weights(counts[live], params), live, random_counts(seed + 1, 6, 10)


@settings(max_examples=40, deadline=None)
@given(corpus=corpora)
def test_tombstoned_rows_score_as_postings_made_from_the_live_rows_alone(corpus):
    got, whole, live, queries = tombstoned(*corpus)
    assert got.n_docs == live.size
    np.testing.assert_allclose(score_queries(queries, got), score_queries(queries, whole), rtol=1e-6, atol=1e-6)
    for row in range(queries.shape[0]):
        terms = queries[row].indices
        np.testing.assert_allclose(score_query(terms, got), score_query(terms, whole), rtol=1e-6, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(corpus=corpora)
def test_the_statistics_leave_the_tombstoned_rows_out(corpus):
    got, whole, _, _ = tombstoned(*corpus)
    inner = got.inner if isinstance(got, TombstonedWeights) else got  # (no tombstone drawn: the segments alone)
    statistics = inner.delta  # a delta always: the base holds at most rows - 1 rows
    np.testing.assert_allclose(statistics.avgdl, whole.avgdl, rtol=1e-12)
    np.testing.assert_allclose(statistics.scale, whole.scale, rtol=1e-12)
    np.testing.assert_array_equal(statistics.nonoccurrence, whole.nonoccurrence)


@settings(max_examples=25, deadline=None)
@given(corpus=corpora)
def test_a_restriction_and_the_eager_weights_of_tombstoned_postings_are_the_live_rows(corpus):
    got, whole, live, queries = tombstoned(*corpus)
    rows = np.arange(0, live.size, 2)
    np.testing.assert_allclose(score_queries(queries, got.restricted(rows)),
                               score_queries(queries, whole.restricted(rows)), rtol=1e-6, atol=1e-6)
    eager, expected = got.eager(), whole.eager()
    np.testing.assert_array_equal(eager.doc_ids, expected.doc_ids)
    np.testing.assert_allclose(eager.data, expected.data, rtol=1e-6)


def test_a_tombstoned_rows_postings_are_numbered_into_the_score_rows_spare_slot():
    got, whole, live, _ = tombstoned(7, 20, 0.5, 0)
    assert isinstance(got, TombstonedWeights) and live.size < 20
    numbers = np.concatenate([ids for term in range(got.vocab_size) for ids, _ in got.posting_parts(term, 1.0)])
    assert numbers.max() == got.n_docs  # the score row's spare slot, after every live row
    assert np.count_nonzero(numbers < got.n_docs) == sum(np.diff(whole.term_ptr))  # the live postings, all of them
    every_term = np.arange(got.vocab_size)
    np.testing.assert_allclose(score_query(every_term, got), score_query(every_term, whole), rtol=1e-6)
    assert top_k_batch(sp.csr_matrix(np.ones((1, got.vocab_size))), got, 3).ids.max() < got.n_docs
