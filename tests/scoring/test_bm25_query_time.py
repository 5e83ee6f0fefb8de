"""BM25 weights derived at query time (``scoring/bm25_query_time.py``) against the eager weights they replace
in the in-process index: every variant and parameter corner, on SciFact and on small random corpora, within 1e-5;
the restriction algebra, batches, the saved arrays and what a damaged state gets."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.errors import PersistenceError
from dashrag.scoring.bm25 import (
    BM25Parameters,
    BM25Weights,
    absent_term_score,
    bm25_weights,
    idf_okapi,
    score_queries,
    score_query,
    top_k_batch,
)
from dashrag.scoring.bm25_query_time import QueryTimeWeights, query_time_weights

CASES = [
    BM25Parameters("okapi"), BM25Parameters("okapi", k1=0.0), BM25Parameters("okapi", k1=2.0, b=1.0, epsilon=0.5),
    BM25Parameters("lucene"), BM25Parameters("lucene", b=0.0), BM25Parameters("bm25plus", delta=1.0),
    BM25Parameters("bm25plus", k1=0.0, delta=0.5), BM25Parameters("bm25l", delta=0.5),
    BM25Parameters("bm25l", k1=0.0, b=1.0), BM25Parameters("bm25l", b=0.0, delta=0.0),
    BM25Parameters("dashai", delta=1.0), BM25Parameters("dashai", k1=1.2, b=0.3, delta=0.0),
]


def counts_of(docs: list[list[str]], vocab: dict[str, int]) -> sp.csr_matrix:
    rows = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in docs]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    indices = np.fromiter((i for r in rows for i in r), dtype=np.int64, count=int(indptr[-1]))
    matrix = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(len(rows), len(vocab)))
    matrix.sum_duplicates()
    return matrix


@pytest.fixture(scope="module")
def scifact(scifact_dir) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """SciFact's 5,183 documents and its first 60 queries as term counts (one lowercase ``\\w+`` tokenizer)."""
    with gzip.open(scifact_dir / "corpus.jsonl.gz", "rt", encoding="utf-8") as lines:
        docs = [re.findall(r"\w+", (d["title"] + " " + d["text"]).lower()) for d in map(json.loads, lines)]
    vocab: dict[str, int] = {}
    counts = counts_of(docs, vocab)
    with (scifact_dir / "queries.jsonl").open(encoding="utf-8") as lines:
        queries = [re.findall(r"\w+", json.loads(line)["text"].lower()) for line in lines][:60]
    known = [[t for t in q if t in vocab] for q in queries]
    return counts, counts_of(known, vocab)[:, :counts.shape[1]]


def magnitudes(weights: BM25Weights) -> BM25Weights:
    """The same postings with every weight's magnitude: what bounds a float32 sum of weights of both signs."""
    return BM25Weights(**{**weights.__dict__, "data": np.abs(weights.data),
                          "nonoccurrence": np.abs(weights.nonoccurrence)})


def assert_scores_close(found: np.ndarray, eager: np.ndarray, bound: np.ndarray) -> None:
    """Within 1e-5 of the eager scores, relative to the sum of the magnitudes of what was added."""
    assert found.shape == eager.shape
    assert np.all(np.abs(found.astype(np.float64) - eager) <= 1e-5 * bound + 1e-7)


@pytest.mark.parametrize("params", CASES, ids=lambda p: f"{p.variant}-k1{p.k1}-b{p.b}-d{p.delta}")
def test_query_time_scores_equal_the_eager_weights_on_scifact(scifact, params):
    counts, queries = scifact
    eager, derived = bm25_weights(counts, params), query_time_weights(counts, params)
    assert_scores_close(score_queries(queries, derived), score_queries(queries, eager),
                        score_queries(queries, magnitudes(eager)))
    # every posting's weight, as the whole-vector distances read them, and BM25+'s constants
    np.testing.assert_allclose(derived.eager().data, eager.data, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(derived.nonoccurrence, eager.nonoccurrence, rtol=1e-6)


def test_scifact_floors_some_okapi_idf_so_the_mean_idf_is_exercised(scifact):
    counts, _ = scifact
    df = np.diff(counts.tocsc().indptr)
    assert np.any(np.log(counts.shape[0] - df + 0.5) - np.log(df + 0.5) < 0)  # a term in over half the documents
    derived = query_time_weights(counts, BM25Parameters("okapi"))
    np.testing.assert_allclose(derived.scale, idf_okapi(df, counts.shape[0], 0.25) * 2.5)


def test_batches_and_the_top_k_equal_one_query_at_a_time(scifact):
    counts, queries = scifact
    derived = query_time_weights(counts, BM25Parameters("lucene"))
    found = top_k_batch(queries, derived, 10)
    for i in range(queries.shape[0]):
        row = queries[i]
        alone = score_query(row.indices, derived, row.data)
        np.testing.assert_array_equal(score_queries(row, derived)[0], alone)
        ids, scores = found.row(i)
        np.testing.assert_array_equal(scores, alone[ids])


def test_saved_arrays_load_to_identical_scores_and_a_damaged_state_is_refused(scifact, tmp_path):
    counts, queries = scifact
    derived = query_time_weights(counts, BM25Parameters("okapi"))
    for name, array in derived.to_arrays().items():
        np.save(tmp_path / f"{name}.npy", array)
    arrays = {name: np.load(tmp_path / f"{name}.npy", mmap_mode="r") for name in QueryTimeWeights.ARRAYS}
    loaded = QueryTimeWeights.from_arrays(arrays, json.loads(json.dumps(derived.meta())))
    np.testing.assert_array_equal(score_queries(queries, loaded), score_queries(queries, derived))
    with pytest.raises(PersistenceError, match="differ in length"):
        QueryTimeWeights.from_arrays({**arrays, "second": arrays["second"][:-1]}, derived.meta())
    with pytest.raises(PersistenceError, match="lengths cover"):
        QueryTimeWeights.from_arrays({**arrays, "lengths": arrays["lengths"][:-1]}, derived.meta())
    with pytest.raises(PersistenceError, match="incomplete"):
        QueryTimeWeights.from_arrays({k: v for k, v in arrays.items() if k != "first"}, derived.meta())


# ---------------------------------------------------------------- properties

small_corpora = st.lists(st.lists(st.sampled_from("abcdefg"), max_size=8), min_size=1, max_size=12).filter(any)


@settings(max_examples=80, deadline=None)
@given(small_corpora, st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=5), st.sampled_from(CASES),
       st.data())
def test_small_random_corpora_score_as_the_eager_weights_whole_and_restricted(docs, query, params, data):
    """Empty chunks, repeated query terms, Okapi's floored idf (tiny corpora), every variant, blocks of postings
    that split posting lists; and a restriction to some chunks scores them exactly as the whole query-time index
    does (a filter changes no score)."""
    vocab: dict[str, int] = {}
    counts = counts_of(docs, vocab)
    block = data.draw(st.integers(1, 5))
    eager, derived = bm25_weights(counts, params), query_time_weights(counts, params, block=block)
    terms = np.array([vocab[t] for t in query if t in vocab], dtype=np.int64)
    assert_scores_close(score_query(terms, derived), score_query(terms, eager),
                        score_query(terms, magnitudes(eager)))
    assert absent_term_score(derived, terms) == pytest.approx(float(absent_term_score(eager, terms)), rel=1e-6)
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, len(docs) - 1)))), dtype=np.int64)
    restricted = derived.restricted(rows)
    assert restricted.n_docs == rows.size
    np.testing.assert_array_equal(score_query(terms, restricted), score_query(terms, derived)[rows])


@pytest.mark.parametrize("edit, message", [
    (lambda a: {**a, "doc_ids": a["doc_ids"] + a["lengths"].shape[0]}, "outside 0..n_docs-1"),
    (lambda a: {**a, "term_ptr": a["term_ptr"][::-1].copy()}, "does not span"),
    (lambda a: {**a, "doc_ids": a["doc_ids"].astype(np.float32)}, "must hold integers"),
])
def test_both_layouts_refuse_an_edited_posting_structure(scifact, edit, message):
    """The checks the eager and the query-time layouts share (``bm25.posting_problems``): either refuses it."""
    counts, _ = scifact
    derived = query_time_weights(counts, BM25Parameters("okapi"))
    with pytest.raises(PersistenceError, match=message):
        QueryTimeWeights.from_arrays(edit(derived.to_arrays()), derived.meta())
    eager = derived.eager()
    edited = edit({**eager.to_arrays(), "lengths": derived.lengths})
    with pytest.raises(PersistenceError, match=message):
        BM25Weights.from_arrays({k: v for k, v in edited.items() if k != "lengths"}, eager.meta())
