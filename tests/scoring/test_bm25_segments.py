"""BM25 postings as a base plus a delta (``scoring/bm25_segments.py``) against the same postings made from every
count at once (``query_time_weights``), and the counts' segments (``scoring/count_segments.py``) against one matrix:
every variant, random small corpora split anywhere, the delta holding terms the base never had."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.scoring.bm25 import BM25Parameters, score_queries, score_query
from dashrag.scoring.bm25_query_time import query_time_weights
from dashrag.scoring.bm25_segments import PostingSegment, SegmentedWeights, segment_weights
from dashrag.scoring.count_segments import CountSegments

VARIANTS = [BM25Parameters("okapi"), BM25Parameters("lucene", b=0.0), BM25Parameters("bm25plus", delta=1.0),
            BM25Parameters("bm25l", delta=0.5), BM25Parameters("dashai", delta=1.0)]


def random_counts(seed: int, rows: int, columns: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 4, size=(rows, columns)) * (rng.random((rows, columns)) < 0.3)
    return sp.csr_matrix(dense.astype(np.float32))


def split(counts: sp.csr_matrix, base_rows: int, base_columns: int) -> CountSegments:
    """``counts`` as segments: the first ``base_rows`` rows over the first ``base_columns`` columns (which must hold
    every count of those rows), the rest as the delta."""
    base = counts[:base_rows, :base_columns]
    assert base.nnz == counts[:base_rows].nnz
    return CountSegments("lineage", sp.csr_matrix(base), sp.csr_matrix(counts[base_rows:]))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), rows=st.integers(2, 30), cut=st.floats(0.05, 0.95),
       variant=st.sampled_from(range(len(VARIANTS))))
def test_a_base_and_a_delta_score_as_postings_made_from_every_count(seed, rows, cut, variant):
    params = VARIANTS[variant]
    counts = random_counts(seed, rows, 12)
    base_rows = max(1, min(rows - 1, int(rows * cut)))
    used = np.flatnonzero(np.asarray(counts[:base_rows].sum(axis=0)).ravel() > 0)
    order = np.concatenate([used, np.setdiff1d(np.arange(12), used)])  # the base's terms first, as an add numbers
    counts = sp.csr_matrix(counts[:, order])
    segments = split(counts, base_rows, max(len(used), 1))
    base = PostingSegment.of_counts(segments.base, params, 0)
    delta = PostingSegment.of_counts(segments.rows_from(base_rows), params, base_rows)
    got = segment_weights(base, delta, params)
    whole = query_time_weights(counts, params)
    assert isinstance(got, SegmentedWeights) and got.n_docs == rows and got.vocab_size == 12
    np.testing.assert_allclose(got.avgdl, whole.avgdl, rtol=1e-12)
    np.testing.assert_allclose(got.delta.scale, whole.scale, rtol=1e-12)
    queries = random_counts(seed + 1, 6, 12)
    np.testing.assert_allclose(score_queries(queries, got), score_queries(queries, whole), rtol=1e-6, atol=1e-6)
    for row in range(6):
        terms = queries[row].indices
        np.testing.assert_allclose(score_query(terms, got), score_query(terms, whole), rtol=1e-6, atol=1e-6)
    merged = got.merged  # a filter's postings and the distances are cut from one merged set
    for name in ("first", "second", "doc_ids", "term_ptr", "lengths"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name))
    rows_kept = np.arange(0, rows, 2)
    np.testing.assert_allclose(score_queries(queries, got.restricted(rows_kept)),
                               score_queries(queries, whole.restricted(rows_kept)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got.eager().data, whole.eager().data, rtol=1e-6)


def test_no_delta_is_exactly_the_whole_postings():
    counts = random_counts(3, 20, 10)
    params = BM25Parameters("okapi")
    got = segment_weights(PostingSegment.of_counts(counts, params, 0), None, params)
    whole = query_time_weights(counts, params)
    assert type(got) is type(whole)
    np.testing.assert_array_equal(score_queries(counts, got), score_queries(counts, whole))


@pytest.mark.parametrize("start", [0, 3, 10, 12, 14])
def test_counts_segments_give_every_row_and_the_rows_from_any_start(start):
    counts = random_counts(5, 14, 9)
    segments = split(counts, 10, 9)
    assert segments.n_rows == 14 and segments.n_columns == 9
    assert (segments.rows_from(start) != counts[start:]).nnz == 0
    assert (segments.whole() != counts).nnz == 0


def test_appending_keeps_the_lineage_and_compacts_past_the_fraction(monkeypatch):
    from dashrag.scoring import count_segments

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.25)
    counts = random_counts(7, 16, 6)
    segments = CountSegments.whole_base(counts[:8])
    grown = segments.appended(sp.csr_matrix(counts[8:10]))  # 2 rows: a quarter of 8, not past it
    assert grown.base is segments.base and grown.delta.shape[0] == 2 and grown.lineage == segments.lineage
    wider = sp.csr_matrix((np.ones(1, dtype=np.float32), [7], [0, 1]), shape=(1, 8))  # a new term's column
    compacted = grown.appended(wider)
    assert compacted.base_rows == 11 and compacted.delta.shape[0] == 0 and compacted.lineage == segments.lineage
    assert compacted.n_columns == 8
    expected = sp.vstack([sp.hstack([counts[:10], sp.csr_matrix((10, 2))]), wider], format="csr")
    assert (compacted.whole() != expected).nnz == 0


def test_saved_counts_share_their_base_and_a_later_save_only_references_it(tmp_path):
    node = tmp_path / "folder" / "snapshot-a" / "nodes" / "n"
    node.mkdir(parents=True)
    counts = random_counts(9, 12, 7)
    saved = split(counts, 9, 7).save(node)
    assert saved.base_reference is not None
    base_dir = tmp_path / "folder" / "models" / saved.base_reference.digest
    stats = {p.name: p.stat().st_mtime_ns for p in base_dir.iterdir()}
    loaded = CountSegments.load(node)
    assert (loaded.whole() != counts).nnz == 0 and loaded.lineage == "lineage"
    again = tmp_path / "folder" / "snapshot-b" / "nodes" / "n"
    again.mkdir(parents=True)
    loaded.appended(sp.csr_matrix(random_counts(10, 1, 7))).save(again)
    assert {p.name: p.stat().st_mtime_ns for p in base_dir.iterdir()} == stats  # the base not written again
    assert (CountSegments.load(again).whole() != sp.vstack([counts, random_counts(10, 1, 7)])).nnz == 0


def test_tombstoned_counts_hold_the_live_rows_and_their_document_frequencies():
    counts = random_counts(11, 14, 9)
    segments = split(counts, 10, 9)
    removed, emptied = segments.removing(np.array([1, 4, 11]))  # live rows: two of the base's, one of the delta's
    live = np.setdiff1d(np.arange(14), [1, 4, 11])
    assert removed.n_rows == 11 and removed.stored_rows == 14
    assert (removed.whole() != counts[live]).nnz == 0
    np.testing.assert_array_equal(removed.df, np.bincount(counts[live].indices, minlength=9))
    np.testing.assert_array_equal(emptied, np.flatnonzero((removed.df == 0) & (segments.df > 0)))
    again, _ = removed.removing(np.array([0]))  # live row 0 is stored row 0; live row 1 was stored row 2
    np.testing.assert_array_equal(again.tombstones, [0, 1, 4, 11])


def test_a_removal_that_empties_a_column_names_it():
    counts = sp.csr_matrix(np.array([[1, 0, 2], [0, 1, 1], [3, 0, 0]], dtype=np.float32))
    removed, emptied = CountSegments.whole_base(counts).removing(np.array([1]))
    np.testing.assert_array_equal(emptied, [1])
    np.testing.assert_array_equal(removed.df, [2, 0, 1])


def test_tombstones_and_the_delta_together_pass_the_fraction(monkeypatch):
    from dashrag.scoring import count_segments

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.25)
    counts = random_counts(13, 12, 6)
    segments = CountSegments.whole_base(counts[:8]).appended(sp.csr_matrix(counts[8:9]))
    assert not segments.past_fraction()  # 1 of 8
    removed, _ = segments.removing(np.array([2, 5]))
    assert removed.past_fraction()  # 1 + 2 of 8
    grown = removed.appended(sp.csr_matrix(counts[9:10]))  # tombstones: no compaction under the same lineage
    assert grown.base is segments.base and grown.delta.shape[0] == 2


def test_saved_tombstones_and_document_frequencies_load_back(tmp_path):
    node = tmp_path / "folder" / "snapshot-a" / "nodes" / "n"
    node.mkdir(parents=True)
    counts = random_counts(17, 12, 7)
    removed, _ = split(counts, 9, 7).removing(np.array([3, 10]))
    removed.save(node)
    loaded = CountSegments.load(node)
    np.testing.assert_array_equal(loaded.tombstones, removed.tombstones)
    np.testing.assert_array_equal(loaded.df, removed.df)
    assert (loaded.whole() != removed.whole()).nnz == 0
