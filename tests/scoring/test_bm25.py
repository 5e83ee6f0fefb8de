"""Exactness of dashrag's BM25 scoring against rank_bm25 and bm25s on SciFact, plus
the algebra of restriction, top-k and batching as property tests.

SciFact (5,183 documents, title + " " + text) is tokenised by one shared
lowercase ``\\w+`` tokenizer; the peers and dashrag see the same token lists.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import bm25s
import numpy as np
import pytest
import rank_bm25
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics.pairwise import cosine_similarity

from dashrag.errors import ConfigError, CorpusError, PersistenceError, QueryError
from dashrag.scoring.bm25 import (
    BM25Parameters,
    BM25Weights,
    bm25_weights,
    cosine_scores,
    document_lengths,
    document_norms,
    idf_okapi,
    restrict_weights,
    score_queries,
    score_query,
    top_k,
    top_k_batch,
)

N_QUERIES = 50


def tokenize(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def count_matrix(token_lists: list[list[str]], vocab: dict[str, int], grow: bool) -> sp.csr_matrix:
    """Rows of token counts; unknown tokens are added when ``grow``, dropped otherwise."""
    rows = [[vocab.setdefault(t, len(vocab)) if grow else vocab[t] for t in toks if grow or t in vocab]
            for toks in token_lists]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    indices = np.fromiter((i for r in rows for i in r), dtype=np.int64, count=int(indptr[-1]))
    m = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(len(rows), len(vocab)))
    m.sum_duplicates()
    return m


class SciFact:
    def __init__(self, folder: Path) -> None:
        with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
            docs = [json.loads(line) for line in fh]
        self.doc_tokens = [tokenize(d["title"] + " " + d["text"]) for d in docs]
        queries = {}
        for line in (folder / "queries.jsonl").open(encoding="utf-8"):
            q = json.loads(line)
            queries[q["_id"]] = q["text"]
        test_ids = list(dict.fromkeys(
            line.split("\t")[0] for line in (folder / "qrels/test.tsv").read_text().splitlines()[1:]))
        self.query_tokens = [tokenize(queries[qid]) for qid in test_ids[:N_QUERIES]]
        self.vocab: dict[str, int] = {}
        self.counts = count_matrix(self.doc_tokens, self.vocab, grow=True)
        self.query_counts = count_matrix(self.query_tokens, self.vocab, grow=False)
        self._peer: dict[tuple, np.ndarray] = {}

    def peer_scores(self, kind: str, subset: bool, **params) -> np.ndarray:
        """rank_bm25 / bm25s scores of the test queries, built once per parameter set (kept on the instance)."""
        key = (kind, subset, tuple(sorted(params.items())))
        if key not in self._peer:
            self._peer[key] = self._peer_scores(kind, subset, **params)
        return self._peer[key]

    def _peer_scores(self, kind: str, subset: bool, **params) -> np.ndarray:
        """rank_bm25 / bm25s scores of the test queries.

        rank_bm25 scores ~2 ms per query token over the full corpus, so the
        non-default cases read its ``get_batch_scores`` (the same formula over
        full-corpus statistics) on every 8th document only, to keep the suite fast.
        """
        if kind == "lucene":
            model = bm25s.BM25(method="lucene", dtype="float64", **params)
            model.index(self.doc_tokens, show_progress=False)
            full = np.array([model.get_scores(q) for q in self.query_tokens])
            return full[:, self.subset] if subset else full
        model = {"okapi": rank_bm25.BM25Okapi, "bm25l": rank_bm25.BM25L,
                 "bm25plus": rank_bm25.BM25Plus}[kind](self.doc_tokens, **params)
        if subset:
            return np.array([model.get_batch_scores(q, self.subset.tolist()) for q in self.query_tokens])
        return np.array([model.get_scores(q) for q in self.query_tokens])

    @property
    def subset(self) -> np.ndarray:
        return np.arange(0, len(self.doc_tokens), 8)


@pytest.fixture(scope="module")
def scifact(scifact_dir) -> SciFact:
    return SciFact(scifact_dir)


PARITY_CASES = [  # (variant, parameters, compare on a document subset)
    ("okapi", {}, False),
    ("bm25l", {"delta": 0.5}, False),
    ("bm25plus", {"delta": 1.0}, False),
    ("lucene", {"k1": 1.5, "b": 0.75}, False),
    ("okapi", {"k1": 0.9, "b": 0.4, "epsilon": 0.5}, True),
    ("bm25l", {"k1": 1.2, "b": 0.3, "delta": 1.0}, True),
    ("bm25plus", {"k1": 2.0, "b": 0.9, "delta": 0.5}, True),
    ("lucene", {"k1": 0.9, "b": 0.4}, False),
]


@pytest.mark.parametrize(("variant", "params", "subset"), PARITY_CASES)
def test_scores_equal_the_reference_library_on_scifact(scifact, variant, params, subset):
    """okapi/bm25l/bm25plus against rank_bm25, lucene against bm25s, to 1e-6 relative."""
    weights = bm25_weights(scifact.counts, BM25Parameters(variant=variant, **params))
    got = score_queries(scifact.query_counts, weights)
    expected = scifact.peer_scores(variant, subset, **params)
    np.testing.assert_allclose(got[:, scifact.subset] if subset else got, expected, rtol=1e-6, atol=0)


def test_scifact_exercises_the_okapi_idf_floor(scifact):
    """The parity test above covers the epsilon floor only if some term is in over half the documents."""
    df = np.diff(scifact.counts.tocsc().indptr)
    assert np.count_nonzero(df > scifact.counts.shape[0] / 2) > 0


def test_okapi_idf_floors_negative_idf_to_epsilon_times_mean():
    df = np.array([1, 2, 8, 0])  # N = 10: idf(8) < 0; df 0 is not a corpus term
    raw = np.log(10 - df[:3] + 0.5) - np.log(df[:3] + 0.5)
    expected = np.array([raw[0], raw[1], 0.3 * raw.mean(), 0.0])
    np.testing.assert_allclose(idf_okapi(df, 10, epsilon=0.3), expected, rtol=1e-15)


def test_lucene_matches_the_hand_formula_on_a_tiny_corpus():
    docs = [["a", "b", "a"], ["b", "c"], ["a", "c", "c", "c"]]
    vocab: dict[str, int] = {}
    counts = count_matrix(docs, vocab, grow=True)
    k1, b, n, avgdl = 1.2, 0.75, 3, 3.0
    df = {"a": 2, "b": 2, "c": 2}

    def hand(term: str, doc: list[str]) -> float:
        tf = doc.count(term)
        idf = np.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
        return idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))

    query = ["a", "c", "c"]
    expected = [sum(hand(t, d) for t in query) for d in docs]
    weights = bm25_weights(counts, BM25Parameters(variant="lucene", k1=k1, b=b))
    got = score_query(np.array([vocab[t] for t in query]), weights)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_a_repeated_query_token_counts_once_per_occurrence(scifact):
    weights = bm25_weights(scifact.counts, BM25Parameters())
    term = scifact.vocab["protein"]
    np.testing.assert_allclose(score_query([term, term], weights), 2 * score_query([term], weights), rtol=1e-12)


def test_a_term_absent_from_the_corpus_adds_nothing_even_in_bm25plus():
    counts = sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 1]]))  # term 1 has df 0 (fixed vocabulary)
    weights = bm25_weights(counts, BM25Parameters(variant="bm25plus", delta=1.0))
    np.testing.assert_array_equal(score_query([1], weights), [0.0, 0.0])


def test_batch_scores_equal_one_query_at_a_time(scifact):
    weights = bm25_weights(scifact.counts, BM25Parameters(variant="bm25plus"))
    batch = score_queries(scifact.query_counts, weights)
    for row, q in zip(batch, scifact.query_counts):
        np.testing.assert_allclose(row, score_query(q.indices, weights, q.data), rtol=1e-12)


def test_saved_arrays_load_to_identical_scores_without_recomputing(scifact, tmp_path):
    weights = bm25_weights(scifact.counts, BM25Parameters(variant="bm25plus", k1=1.1))
    for name, array in weights.to_arrays().items():
        np.save(tmp_path / f"{name}.npy", array, allow_pickle=False)
    loaded_arrays = {p.stem: np.load(p, mmap_mode="r", allow_pickle=False) for p in tmp_path.glob("*.npy")}
    meta = json.loads(json.dumps(weights.meta()))
    loaded = BM25Weights.from_arrays(loaded_arrays, meta)
    np.testing.assert_array_equal(score_queries(scifact.query_counts, loaded),
                                  score_queries(scifact.query_counts, weights))


def test_truncated_arrays_are_refused_on_load():
    weights = bm25_weights(sp.csr_matrix(np.array([[1, 2], [0, 3]])), BM25Parameters())
    arrays = dict(weights.to_arrays(), data=weights.data[:-1])
    with pytest.raises(PersistenceError, match="differ in length"):
        BM25Weights.from_arrays(arrays, weights.meta())


def test_cosine_mode_equals_sklearn_cosine_of_the_weighted_rows():
    counts = sp.csr_matrix(np.array([[2, 1, 0, 0], [0, 1, 3, 0], [1, 0, 0, 4], [0, 0, 0, 0]]))
    weights = bm25_weights(counts, BM25Parameters(variant="okapi"))
    dense_rows = sp.csr_matrix((weights.data, weights.doc_ids, weights.term_ptr),
                               shape=(weights.vocab_size, weights.n_docs)).T.toarray()
    queries = sp.csr_matrix(np.array([[1, 0, 2, 0], [0, 1, 0, 1], [0, 0, 0, 0]]))
    expected = cosine_similarity(queries.toarray(), dense_rows)
    got = cosine_scores(queries, weights, document_norms(weights))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12)


def test_an_unknown_variant_is_a_config_error():
    with pytest.raises(ConfigError, match="variant"):
        BM25Parameters(variant="bm26")


def test_an_empty_corpus_is_a_corpus_error():
    with pytest.raises(CorpusError):
        bm25_weights(sp.csr_matrix((0, 3)), BM25Parameters())


def test_a_query_matrix_of_another_vocabulary_is_a_query_error():
    weights = bm25_weights(sp.csr_matrix(np.eye(3)), BM25Parameters())
    with pytest.raises(QueryError, match="terms"):
        score_queries(sp.csr_matrix((1, 4)), weights)


# ---------------------------------------------------------------- properties

small_corpora = st.lists(st.lists(st.sampled_from("abcdefg"), max_size=8), min_size=1, max_size=12).filter(
    lambda docs: any(docs))  # rank_bm25 divides by the mean length


@settings(max_examples=60, deadline=None)
@given(small_corpora, st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=5),
       st.sampled_from(["okapi", "bm25l", "bm25plus"]), st.integers(1, 4))
def test_small_random_corpora_match_rank_bm25_whatever_the_block_size(docs, query, variant, block):
    """Empty documents, absent terms, repeated tokens, and weight blocks that split the postings.

    Tiny corpora can make Okapi's idf floor negative (most terms in over half
    the documents), and a sum of float32 weights of both signs is exact only
    relative to the sum of their magnitudes: that is the bound checked here.
    """
    vocab: dict[str, int] = {}
    counts = count_matrix(docs, vocab, grow=True)
    reference = {"okapi": rank_bm25.BM25Okapi, "bm25l": rank_bm25.BM25L, "bm25plus": rank_bm25.BM25Plus}[variant]
    delta = {"okapi": 1.0, "bm25l": 0.5, "bm25plus": 1.0}[variant]
    weights = bm25_weights(counts, BM25Parameters(variant=variant, delta=delta), block=block)
    term_ids = [vocab[t] for t in query if t in vocab]
    magnitudes = BM25Weights(**{**weights.__dict__, "data": np.abs(weights.data),
                                "nonoccurrence": np.abs(weights.nonoccurrence)})
    error = np.abs(score_query(term_ids, weights) - reference(docs).get_scores(query))
    assert np.all(error <= 1e-6 * score_query(term_ids, magnitudes) + 1e-12)


@settings(max_examples=80, deadline=None)
@given(small_corpora, st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=5),
       st.sampled_from(["okapi", "bm25l", "bm25plus", "lucene"]), st.data())
def test_weights_restricted_to_some_documents_score_them_exactly_as_the_whole_index(docs, query, variant, data):
    """Bit for bit, BM25+'s constant included: a filter changes no score."""
    vocab: dict[str, int] = {}
    counts = count_matrix(docs, vocab, grow=True)
    weights = bm25_weights(counts, BM25Parameters(variant=variant))
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, len(docs) - 1)))), dtype=np.int64)
    term_ids = [vocab[t] for t in query if t in vocab]
    restricted = restrict_weights(weights, rows)
    assert restricted.n_docs == rows.size
    np.testing.assert_array_equal(score_query(term_ids, restricted), score_query(term_ids, weights)[rows])


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(1, 9), st.integers(1, 6)), elements=st.integers(0, 3)))
def test_document_lengths_are_row_sums_including_empty_rows(dense):
    np.testing.assert_array_equal(document_lengths(sp.csr_matrix(dense)), dense.sum(axis=1))


# Small integer-valued scores force many ties, which is where top-k can go wrong.
tied_scores = arrays(np.float64, st.integers(1, 60), elements=st.integers(-3, 3).map(float))


def stable_order(scores: np.ndarray) -> np.ndarray:
    return np.argsort(-scores, kind="stable")


@settings(max_examples=100, deadline=None)
@given(tied_scores, st.integers(1, 70))
def test_top_k_order_equals_the_full_stable_argsort(scores, k):
    ids, values = top_k(scores, k)
    np.testing.assert_array_equal(ids, stable_order(scores)[:k])
    np.testing.assert_array_equal(values, scores[ids])


@settings(max_examples=100, deadline=None)
@given(tied_scores, st.integers(1, 70), st.data())
def test_restriction_excludes_and_still_returns_k_where_k_exist(scores, k, data):
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=scores.size, max_size=scores.size)))
    ids, _ = top_k(scores, k, allowed)
    assert allowed[ids].all()
    assert ids.size == min(k, int(allowed.sum()))


def test_top_k_batch_equals_top_k_of_each_query_scored_alone(scifact):
    weights = bm25_weights(scifact.counts, BM25Parameters())
    allowed = np.arange(weights.n_docs) % 3 != 0
    found = top_k_batch(scifact.query_counts, weights, 10, allowed)
    for (ids, values), q in zip(found.rows(), scifact.query_counts):
        expected_ids, expected_values = top_k(score_query(q.indices, weights, q.data), 10, allowed)
        np.testing.assert_array_equal(ids, expected_ids)
        np.testing.assert_array_equal(values, expected_values)
        assert allowed[ids].all() and ids.size == 10


def test_top_k_batch_honours_one_restriction_per_query(scifact):
    weights = bm25_weights(scifact.counts, BM25Parameters())
    n_queries = scifact.query_counts.shape[0]
    allowed = (np.arange(weights.n_docs)[None, :] % n_queries) == np.arange(n_queries)[:, None]
    results = top_k_batch(scifact.query_counts, weights, 10, allowed)
    for row, (ids, _) in enumerate(results.rows()):
        assert ids.size == 10 and allowed[row, ids].all()


def test_top_k_batch_pads_rows_that_have_fewer_allowed_documents_than_k(scifact):
    weights = bm25_weights(scifact.counts, BM25Parameters())
    allowed = np.zeros(weights.n_docs, dtype=bool)
    allowed[[5, 17, 40]] = True
    found = top_k_batch(scifact.query_counts[:4], weights, 10, allowed)
    assert found.ids.shape == found.scores.shape == (4, 10)
    assert all(sorted(ids.tolist()) == [5, 17, 40] for ids, _ in found.rows())
    assert (found.ids[:, 3:] == -1).all() and np.isneginf(found.scores[:, 3:]).all()
