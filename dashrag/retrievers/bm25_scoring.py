"""BM25 as pure array functions: eager weights, one-pass batch scoring, exact top-k.

Why eager: every BM25 variant here scores a document as a sum over the query's
terms of ``w(term, doc)``, and ``w`` depends only on the corpus. So the weights
are computed once at index time into a term-major sparse matrix (one posting
list per term, the layout of ``W.T`` in CSR form), and a query costs a gather of
its terms' posting lists plus one scatter-add. This is the design of bm25s
(Lù, 2024); the formulas are those of rank_bm25, so scores equal its
``get_scores`` for the same tokens.

Notation: ``N`` documents, ``df`` a term's document frequency, ``tf`` its count
in a document, ``dl`` the document's length, ``avgdl`` the mean length,
``norm = 1 - b + b * dl / avgdl``.

- okapi:    idf = log(N - df + .5) - log(df + .5), a negative idf replaced by
            epsilon * (mean idf over the vocabulary) as rank_bm25 does;
            w = idf * tf (k1 + 1) / (tf + k1 norm)
- bm25l:    idf = log(N + 1) - log(df + .5);
            w = idf * tf (k1 + 1)(c + δ) / (k1 + c + δ), c = tf / norm
- bm25plus: idf = log((N + 1) / df);
            w = idf * (δ + tf (k1 + 1) / (k1 norm + tf)), and idf * δ where tf = 0
- lucene:   idf = log(1 + (N - df + .5) / (df + .5));
            w = idf * tf / (tf + k1 norm)
Every other variant adds 0 for a term the document lacks.

Two rank_bm25 quirks are kept on purpose, for exact parity: BM25L multiplies by
``tf`` once more than Lv & Zhai's formula (so an absent term adds 0, where bm25s
adds ``idf (k1+1) δ / (k1+δ)``), and a repeated query token counts once per
occurrence. BM25+'s constant ``idf * δ`` for absent terms is not stored in the
matrix (that would make it dense): the matrix holds ``w - idf*δ`` where ``tf>0``
and the per-term ``nonoccurrence`` vector is added through the query's counts,
as bm25s does.

A term with ``df = 0`` (possible with a fixed vocabulary) gets idf 0 and no
weight: it can never match, and BM25+'s ``log((N+1)/0)`` would be infinite.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping

import numpy as np
import scipy.sparse as sp

from dashrag.core import ranking
from dashrag.errors import ConfigError, CorpusError, PersistenceError, QueryError

VARIANTS = ("okapi", "bm25l", "bm25plus", "lucene")
WEIGHT_DTYPE = np.float32  # half the memory of float64; scores still accumulate in float64


@dataclass(frozen=True)
class BM25Parameters:
    """The parameters every variant reads (``delta`` only BM25L/BM25+, ``epsilon`` only Okapi)."""

    variant: str = "okapi"
    k1: float = 1.5
    b: float = 0.75
    delta: float = 1.0
    epsilon: float = 0.25

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ConfigError(f"variant: {self.variant!r} is not one of {', '.join(VARIANTS)}")
        if not self.k1 > 0:
            raise ConfigError(f"k1: must be > 0, got {self.k1}")
        if not 0 <= self.b <= 1:
            raise ConfigError(f"b: must be between 0 and 1, got {self.b}")
        if self.delta < 0:
            raise ConfigError(f"delta: must be >= 0, got {self.delta}")


# ---------------------------------------------------------------- corpus statistics


def document_lengths(counts: sp.csr_matrix) -> np.ndarray:
    """``dl[d]`` = sum of the counts in row ``d`` (the number of indexed tokens).

    A float64 ``reduceat`` over the stored counts: scipy's ``sum(axis=1)`` would
    upcast a whole copy of the data first.
    """
    lengths = np.zeros(counts.shape[0], dtype=np.float64)
    nonempty = np.diff(counts.indptr) > 0
    if nonempty.any():  # the starts of non-empty rows delimit exactly their entries
        lengths[nonempty] = np.add.reduceat(counts.data, counts.indptr[:-1][nonempty], dtype=np.float64)
    return lengths


def length_norm(doc_lengths: np.ndarray, b: float) -> np.ndarray:
    """``norm = 1 - b + b * dl / avgdl``; an all-empty corpus (avgdl 0) gets norm 1-b+0."""
    avgdl = float(doc_lengths.mean()) if doc_lengths.size else 0.0
    scale = doc_lengths / avgdl if avgdl > 0 else np.zeros_like(doc_lengths)
    return 1.0 - b + b * scale


# ---------------------------------------------------------------- idf per variant


def _present(df: np.ndarray) -> np.ndarray:
    return df > 0


def idf_okapi(df: np.ndarray, n_docs: int, epsilon: float) -> np.ndarray:
    """``log(N - df + .5) - log(df + .5)``, negatives floored to ``epsilon * mean idf``.

    The mean is taken over the terms present in the corpus *before* flooring,
    as rank_bm25's BM25Okapi does; floored terms get that one constant.
    """
    present = _present(df)
    idf = np.zeros(df.shape, dtype=np.float64)
    idf[present] = np.log(n_docs - df[present] + 0.5) - np.log(df[present] + 0.5)
    mean_idf = idf[present].mean() if present.any() else 0.0
    idf[present & (idf < 0)] = epsilon * mean_idf
    return idf


def idf_bm25l(df: np.ndarray, n_docs: int) -> np.ndarray:
    """``log(N + 1) - log(df + .5)`` (rank_bm25 BM25L)."""
    present = _present(df)
    return np.where(present, np.log(n_docs + 1.0) - np.log(df + 0.5), 0.0)


def idf_bm25plus(df: np.ndarray, n_docs: int) -> np.ndarray:
    """``log((N + 1) / df)`` (rank_bm25 BM25Plus)."""
    present = _present(df)
    return np.where(present, np.log((n_docs + 1.0) / np.maximum(df, 1)), 0.0)


def idf_lucene(df: np.ndarray, n_docs: int) -> np.ndarray:
    """``log(1 + (N - df + .5) / (df + .5))``: never negative, so no floor is needed."""
    present = _present(df)
    return np.where(present, np.log1p((n_docs - df + 0.5) / (df + 0.5)), 0.0)


# ---------------------------------------------------------------- tf part per variant


def tf_okapi(tf: np.ndarray, norm: np.ndarray, k1: float) -> np.ndarray:
    """``tf (k1 + 1) / (tf + k1 norm)``."""
    return tf * (k1 + 1.0) / (tf + k1 * norm)


def tf_bm25l(tf: np.ndarray, norm: np.ndarray, k1: float, delta: float) -> np.ndarray:
    """``tf (k1 + 1)(c + δ) / (k1 + c + δ)`` with ``c = tf / norm`` (rank_bm25's extra ``tf``)."""
    c = tf / norm
    return tf * (k1 + 1.0) * (c + delta) / (k1 + c + delta)


def tf_bm25plus_occurrence(tf: np.ndarray, norm: np.ndarray, k1: float) -> np.ndarray:
    """``tf (k1 + 1) / (k1 norm + tf)``: BM25+ without its constant ``δ`` (see nonoccurrence)."""
    return tf * (k1 + 1.0) / (k1 * norm + tf)


def tf_lucene(tf: np.ndarray, norm: np.ndarray, k1: float) -> np.ndarray:
    """``tf / (tf + k1 norm)``: Lucene drops Robertson's ``(k1 + 1)``, which does not change ranks."""
    return tf / (tf + k1 * norm)


def variant_idf(params: BM25Parameters, df: np.ndarray, n_docs: int) -> np.ndarray:
    """The idf vector of ``params.variant``."""
    if params.variant == "okapi":
        return idf_okapi(df, n_docs, params.epsilon)
    if params.variant == "bm25l":
        return idf_bm25l(df, n_docs)
    if params.variant == "bm25plus":
        return idf_bm25plus(df, n_docs)
    return idf_lucene(df, n_docs)


def variant_tf(params: BM25Parameters, tf: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """The tf part of ``params.variant`` for entries with ``tf > 0``."""
    if params.variant == "okapi":
        return tf_okapi(tf, norm, params.k1)
    if params.variant == "bm25l":
        return tf_bm25l(tf, norm, params.k1, params.delta)
    if params.variant == "bm25plus":
        return tf_bm25plus_occurrence(tf, norm, params.k1)
    return tf_lucene(tf, norm, params.k1)


def nonoccurrence(params: BM25Parameters, idf: np.ndarray) -> np.ndarray:
    """What a term adds to a document that lacks it: ``idf * δ`` for BM25+, else 0."""
    if params.variant == "bm25plus":
        return idf * params.delta
    return np.zeros_like(idf)


# ---------------------------------------------------------------- the weight matrix


@dataclass(frozen=True)
class BM25Weights:
    """Precomputed BM25 weights, term-major: the posting list of term ``t`` is
    ``doc_ids[term_ptr[t]:term_ptr[t+1]]`` with weights ``data[...]`` (the CSR
    arrays of ``W.T``, ``W`` being n_docs x vocab). ``nonoccurrence[t]`` is added
    to every document per query occurrence of ``t`` (non-zero only for BM25+)."""

    data: np.ndarray
    doc_ids: np.ndarray
    term_ptr: np.ndarray
    nonoccurrence: np.ndarray
    n_docs: int
    params: BM25Parameters

    @property
    def vocab_size(self) -> int:
        return int(self.term_ptr.shape[0] - 1)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays to save as ``.npy`` files (no pickle); pair with :meth:`meta`."""
        return {
            "data": self.data,
            "doc_ids": self.doc_ids,
            "term_ptr": self.term_ptr,
            "nonoccurrence": self.nonoccurrence,
        }

    def meta(self) -> dict:
        """The JSON-ready rest: number of documents and the parameters."""
        return {"n_docs": int(self.n_docs), "params": asdict(self.params)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping) -> "BM25Weights":
        """Rebuild from :meth:`to_arrays` / :meth:`meta` without recomputing; checks consistency.

        Arrays may be memory-mapped (``np.load(..., mmap_mode="r")``); they are not copied.
        A truncated or edited state is a :class:`PersistenceError`, never a wrong score.
        """
        try:
            params = BM25Parameters(**meta["params"])
            weights = cls(
                data=arrays["data"], doc_ids=arrays["doc_ids"], term_ptr=arrays["term_ptr"],
                nonoccurrence=arrays["nonoccurrence"], n_docs=int(meta["n_docs"]), params=params,
            )
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise PersistenceError(f"BM25 weights: incomplete or invalid state ({exc})") from exc
        _check_consistent(weights)
        return weights


def _check_consistent(w: BM25Weights) -> None:
    """Raise :class:`PersistenceError` unless the arrays describe one valid posting matrix."""
    nnz = w.data.shape[0]
    problems = []
    if not (np.issubdtype(w.doc_ids.dtype, np.integer) and np.issubdtype(w.term_ptr.dtype, np.integer)):
        problems.append("doc_ids and term_ptr must hold integers")
    if w.data.ndim != 1 or w.doc_ids.shape != (nnz,):
        problems.append("data and doc_ids differ in length")
    if w.term_ptr.ndim != 1 or w.term_ptr.shape[0] < 1 or w.term_ptr[0] != 0 or w.term_ptr[-1] != nnz:
        problems.append("term_ptr does not span the postings")
    elif np.any(np.diff(w.term_ptr) < 0):
        problems.append("term_ptr is not monotone")
    if w.nonoccurrence.shape != (max(w.term_ptr.shape[0] - 1, 0),):
        problems.append("nonoccurrence does not match the vocabulary")
    if nnz and (w.doc_ids.min() < 0 or w.doc_ids.max() >= w.n_docs):
        problems.append("a posting names a document outside 0..n_docs-1")
    if problems:
        raise PersistenceError("BM25 weights: " + "; ".join(problems))


def _owned(array: np.ndarray) -> np.ndarray:
    """``array`` itself, or a compact copy when it is a view into a larger buffer
    (scipy's ``sum_duplicates`` trims by slicing), so the index holds no dead tail."""
    return array.copy() if _is_view_of_larger(array) else array


def _is_view_of_larger(array: np.ndarray) -> bool:
    return isinstance(array.base, np.ndarray) and array.base.nbytes > array.nbytes


def _term_blocks(term_ptr: np.ndarray, block: int) -> list[tuple[int, int]]:
    """Consecutive term ranges ``[first, last)`` of about ``block`` postings each (a long
    posting list may exceed it: a term is never split)."""
    n_terms = term_ptr.shape[0] - 1
    cuts = np.searchsorted(term_ptr, np.arange(0, term_ptr[-1], block), side="right") - 1
    bounds = np.unique(np.concatenate([cuts, [n_terms]]))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def bm25_weights(
    counts: sp.spmatrix,
    params: BM25Parameters = BM25Parameters(),
    doc_lengths: np.ndarray | None = None,
    block: int = 1 << 14,
) -> BM25Weights:
    """Turn a document-term count matrix (n_docs x vocab) into eager :class:`BM25Weights`.

    ``doc_lengths`` defaults to the row sums; pass the true token counts when the
    vectorizer dropped tokens (stop words, min_df) and you want rank_bm25's lengths.
    Duplicate entries of ``counts`` are summed. Memory: the counts are transposed
    once into posting lists and the weights overwrite that copy's data, computed
    in float64 ``block`` entries at a time and stored as float32, so the peak
    stays near the size of the index itself.
    """
    counts = sp.csr_matrix(counts)
    n_docs = counts.shape[0]
    if n_docs == 0:
        raise CorpusError("cannot build a BM25 index over zero documents")
    lengths = document_lengths(counts) if doc_lengths is None else np.asarray(doc_lengths, dtype=np.float64)
    if lengths.shape != (n_docs,):
        raise CorpusError(f"doc_lengths has shape {lengths.shape}, the counts have {n_docs} documents")
    postings = counts.tocsc()  # a new matrix: CSC of (docs x terms) == CSR of the transpose
    postings.sum_duplicates()
    postings.eliminate_zeros()
    df = np.diff(postings.indptr)
    idf = variant_idf(params, df, n_docs)
    norm = length_norm(lengths, params.b)
    doc_ids = _owned(postings.indices.astype(np.int32, copy=False))
    reusable = postings.data.dtype == WEIGHT_DTYPE and not _is_view_of_larger(postings.data)
    data = postings.data if reusable else np.empty(postings.nnz, dtype=WEIGHT_DTYPE)
    for first, last in _term_blocks(postings.indptr, block):
        lo, hi = postings.indptr[first], postings.indptr[last]
        term_of_entry = np.repeat(np.arange(first, last), df[first:last])
        tf_part = variant_tf(params, postings.data[lo:hi].astype(np.float64), norm[doc_ids[lo:hi]])
        data[lo:hi] = idf[term_of_entry] * tf_part
    return BM25Weights(
        data=data,
        doc_ids=doc_ids,
        term_ptr=postings.indptr.astype(np.int64),
        nonoccurrence=nonoccurrence(params, idf).astype(WEIGHT_DTYPE),
        n_docs=n_docs,
        params=params,
    )


# ---------------------------------------------------------------- scoring


def _scatter(weights: BM25Weights, row_ptr: np.ndarray, term_ids: np.ndarray, term_counts) -> np.ndarray:
    """``S[r, d] = sum over entries i of row r of c_i * W[d, t_i]``: the sparse product ``Q @ W.T``.

    ``(row_ptr, term_ids, term_counts)`` are the CSR arrays of ``Q`` (counts
    ``None`` means all 1). Every entry's posting list is gathered with one
    vectorised index computation and added into the dense (rows x n_docs)
    float64 result by one ``np.bincount`` over ``row * n_docs + doc``: no
    Python loop, no sparse intermediate, float64 accumulation of the float32
    weights. Measured faster than scipy's sparse-times-sparse, and than scipy
    row indexing, whose per-call overhead dominates small blocks.
    """
    n_rows, n_docs = row_ptr.shape[0] - 1, weights.n_docs
    starts = weights.term_ptr[term_ids]
    lengths = weights.term_ptr[term_ids + 1] - starts
    positions = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    positions += np.arange(positions.shape[0], dtype=np.int64)
    if n_rows > 1:
        row_of_entry = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(row_ptr))
        targets = np.repeat(row_of_entry * n_docs, lengths)
        targets += weights.doc_ids[positions]
    else:
        targets = weights.doc_ids[positions]
    values = weights.data[positions]
    if term_counts is not None and not np.all(term_counts == 1):
        values = values * np.repeat(np.asarray(term_counts, dtype=np.float64), lengths)
    flat = np.bincount(targets, weights=values, minlength=n_rows * n_docs)
    return flat.astype(np.float64, copy=False).reshape(n_rows, n_docs)


def _score_rows(weights: BM25Weights, row_ptr: np.ndarray, term_ids: np.ndarray, term_counts) -> np.ndarray:
    """:func:`_scatter` plus, for BM25+, each row's constant ``sum_i c_i * nonoccurrence[t_i]``."""
    scores = _scatter(weights, row_ptr, term_ids, term_counts)
    if weights.params.variant == "bm25plus":
        per_entry = weights.nonoccurrence[term_ids].astype(np.float64)
        if term_counts is not None:
            per_entry *= term_counts
        row_of_entry = np.repeat(np.arange(scores.shape[0]), np.diff(row_ptr))
        scores += np.bincount(row_of_entry, weights=per_entry, minlength=scores.shape[0])[:, None]
    return scores


def _as_query_matrix(query_counts: sp.spmatrix, vocab_size: int) -> sp.csr_matrix:
    q = sp.csr_matrix(query_counts)
    if q.shape[1] != vocab_size:
        raise QueryError(f"query matrix has {q.shape[1]} terms, the index has {vocab_size}")
    return q


def score_queries(query_counts: sp.spmatrix, weights: BM25Weights) -> np.ndarray:
    """BM25 scores of a batch: ``S = Q @ W.T + Q @ nonoccurrence`` (n_queries x n_docs, float64).

    ``Q`` holds each query's token *counts* (n_queries x vocab), as rank_bm25
    adds a repeated query token once per occurrence.
    """
    q = _as_query_matrix(query_counts, weights.vocab_size)
    return _score_rows(weights, q.indptr, q.indices.astype(np.int64), q.data)


def score_query(term_ids, weights: BM25Weights, term_counts=None) -> np.ndarray:
    """BM25 scores of one query given its in-vocabulary term ids (repeats allowed), shape (n_docs,).

    The same product as :func:`score_queries` for one row, without building a
    sparse matrix: a single query is latency-bound.
    """
    term_ids = np.asarray(term_ids, dtype=np.int64)
    if term_ids.size and (term_ids.min() < 0 or term_ids.max() >= weights.vocab_size):
        raise QueryError(f"term ids must lie in 0..{weights.vocab_size - 1}")
    counts = None if term_counts is None else np.asarray(term_counts, dtype=np.float64)
    return _score_rows(weights, np.array([0, term_ids.size]), term_ids, counts)[0]


def document_norms(weights: BM25Weights) -> np.ndarray:
    """Euclidean norm of each document's row of stored weights, ``||W[d, :]||``."""
    squares = np.square(weights.data, dtype=np.float64)
    return np.sqrt(np.bincount(weights.doc_ids, weights=squares, minlength=weights.n_docs))


def cosine_scores(query_counts: sp.spmatrix, weights: BM25Weights, doc_norms: np.ndarray) -> np.ndarray:
    """Cosine between each query's count vector and each document's BM25 weight row.

    ``cos(q, d) = (q . W[d]) / (||q|| ||W[d]||)``, 0 where either norm is 0 (as
    scikit-learn's ``cosine_similarity``). This is the "vector similarity" mode
    of the reference implementation (DashAI), kept so its configs load. It is
    NOT BM25 ranking: the normalisation by ``||W[d]||`` rewards short documents
    and ignores BM25's own length normalisation, and BM25+'s absent-term
    constant is not part of the document vector. ``doc_norms`` comes from
    :func:`document_norms` (compute it once per index).
    """
    q = _as_query_matrix(query_counts, weights.vocab_size)
    dots = _scatter(weights, q.indptr, q.indices.astype(np.int64), q.data)
    query_norms = np.sqrt(np.asarray(q.multiply(q).sum(axis=1), dtype=np.float64).ravel())
    denominator = query_norms[:, None] * doc_norms[None, :]
    return np.divide(dots, denominator, out=np.zeros_like(dots), where=denominator > 0)


# ---------------------------------------------------------------- restriction and top-k


def restrict(scores: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """Scores with every disallowed document set to ``-inf`` (``allowed`` broadcasts over rows).

    Applied *before* top-k, so a filter truly excludes and top-k still returns k
    documents whenever k are allowed. Returns a new array; ``None`` allows all.
    """
    if allowed is None:
        return scores
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape[-1] != scores.shape[-1]:
        raise QueryError(f"restriction covers {allowed.shape[-1]} documents, the index has {scores.shape[-1]}")
    return np.where(allowed, scores, -np.inf)


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best documents of one score vector: (indices, scores), best first.

    :func:`dashrag.core.ranking.top_k_rows`, the selection every leaf uses: ties go
    to the lower index, also at the k-th place, and ``-inf`` (restricted) documents
    are never returned.
    """
    rows = ranking.top_k_rows(scores, int(k))
    return rows, scores[rows]


def top_k_rows(scores: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`top_k` of every row of a (n_queries x n_docs) matrix, vectorised over rows.

    One 2-D ``np.partition`` gives each row's k-th best value; the entries at or
    above it are found in one pass over the matrix and sorted by
    (row, -score, index), so ties resolve exactly as in :func:`top_k`.
    """
    n_rows, n = scores.shape
    k = min(int(k), n)
    if k <= 0 or n_rows == 0:
        return [top_k(row, k) for row in scores]
    kth = np.partition(scores, n - k, axis=1)[:, n - k]
    kth = np.where(kth > -np.inf, kth, np.nextafter(-np.inf, 0))  # a restricted k-th place: keep all allowed
    flat = np.flatnonzero(scores >= kth[:, None])
    rows, cols = np.divmod(flat, n)
    values = scores.ravel()[flat]
    order = np.lexsort((cols, -values, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    bounds = np.searchsorted(rows, np.arange(n_rows + 1))
    return [(cols[lo:min(hi, lo + k)], values[lo:min(hi, lo + k)]) for lo, hi in zip(bounds[:-1], bounds[1:])]


def top_k_batch(
    query_counts: sp.spmatrix,
    weights: BM25Weights,
    k: int,
    allowed: np.ndarray | None = None,
    max_cells: int = 1 << 16,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Top-k of every query: score, restrict, select, in blocks of rows.

    A block holds at most ``max_cells`` scores (512 KiB of float64 by default,
    at least one query): the dense block stays in cache, which measured faster
    than one large product, and a large batch never materialises the whole
    (n_queries x n_docs) matrix. ``allowed`` is one boolean vector for all
    queries or one row per query.
    """
    q = _as_query_matrix(query_counts, weights.vocab_size)
    term_ids = q.indices.astype(np.int64)
    rows_per_block = max(1, max_cells // max(weights.n_docs, 1))
    per_query_mask = allowed is not None and np.ndim(allowed) == 2
    results: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, q.shape[0], rows_per_block):
        stop = min(start + rows_per_block, q.shape[0])
        lo, hi = q.indptr[start], q.indptr[stop]
        scores = _score_rows(weights, q.indptr[start:stop + 1] - lo, term_ids[lo:hi], q.data[lo:hi])
        mask = allowed[start:stop] if per_query_mask else allowed
        results.extend(top_k_rows(restrict(scores, mask), k))
    return results
