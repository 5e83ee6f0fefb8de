"""InMemoryKeywordIndex keeps a selective filter's posting lists (built on its first use) and nothing else."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dashrag.indexes.base import IndexIdentity
from dashrag.indexes.keyword_in_memory import InMemoryKeywordIndex
from dashrag.scoring.bm25 import bm25_weights, score_query

N_DOCS, VOCAB = 200, 40
IDENTITY = IndexIdentity("corpus", "key", "bm25-weights", VOCAB)


def holding(seed: int) -> InMemoryKeywordIndex:
    counts = sp.random(N_DOCS, VOCAB, density=0.2, random_state=seed, format="csr", data_rvs=lambda n: np.ones(n))
    index = InMemoryKeywordIndex()
    index.add(bm25_weights(counts), IDENTITY)
    return index


def keeping(share: float, seed: int = 0) -> np.ndarray:
    mask = np.zeros(N_DOCS, dtype=bool)
    mask[np.random.default_rng(seed).choice(N_DOCS, int(share * N_DOCS), replace=False)] = True
    mask.flags.writeable = False  # as the chunk set hands a filter's mask out
    return mask


def test_a_selective_masks_postings_score_its_rows_as_the_whole_index():
    index, mask = holding(1), keeping(0.05)
    rows, cut = index.postings_of(mask)
    np.testing.assert_array_equal(rows, np.flatnonzero(mask))
    terms = [3, 7, 11]
    np.testing.assert_array_equal(score_query(terms, cut), score_query(terms, index.weights)[rows])


def test_the_postings_are_built_on_a_masks_first_use_and_kept():
    index, mask = holding(1), keeping(0.05)
    first, second = index.postings_of(mask), index.postings_of(mask)
    assert first is not None and second is not None and first[1] is second[1]


def test_a_mask_keeping_half_the_rows_or_more_gets_none():
    assert holding(1).postings_of(keeping(0.5)) is None


def test_new_weights_drop_the_kept_postings():
    index, mask = holding(1), keeping(0.05)
    before = index.postings_of(mask)
    index.add(holding(2).weights, IDENTITY)
    after = index.postings_of(mask)
    assert before is not None and after is not None and after[1] is not before[1]
    terms = [3, 7, 11]
    np.testing.assert_array_equal(score_query(terms, after[1]), score_query(terms, index.weights)[after[0]])


def test_the_kept_postings_hold_at_most_the_whole_index_in_bytes_the_least_recently_used_dropped_first():
    index = holding(1)
    masks = [keeping(0.45, seed) for seed in range(6)]  # each near half the index: at most two are kept
    first = index.postings_of(masks[0])
    for mask in masks[1:]:
        index.postings_of(mask)
    held = sum(cut[1].data.nbytes + cut[1].doc_ids.nbytes for _, cut in index._cut_down.values() if cut)
    assert held <= index.weights.data.nbytes + index.weights.doc_ids.nbytes
    assert first is not None and index.postings_of(masks[0])[1] is not first[1]  # dropped, built again
    assert index.postings_of(masks[-1])[1] is index.postings_of(masks[-1])[1]  # the latest is kept
