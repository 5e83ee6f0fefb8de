"""BM25 as pure array functions: eager weights, posting-list scoring, exact top-k.

Why eager: every BM25 variant here scores a document as a sum over the query's
terms of ``w(term, doc)``, and ``w`` depends only on the corpus. So the weights
are computed once at index time into a term-major sparse matrix (one posting
list per term, the layout of ``W.T`` in CSR form), and a query costs one
scatter-add of each of its terms' posting lists. This is the design of bm25s
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
- dashai:   idf = log(1 + (N - df + .5) / (df + .5)) + δ   (DashAI's BM25Retriever: δ added to the idf);
            w = idf * tf (k1 + 1) / (tf + k1 norm)
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

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

import numpy as np

from dashrag.core import ranking
from dashrag.errors import ConfigError, CorpusError, PersistenceError, QueryError

if TYPE_CHECKING:  # scipy is imported where a sparse matrix is made: a lone query needs none
    import scipy.sparse as sp

VARIANTS = ("okapi", "bm25l", "bm25plus", "lucene", "dashai")
WEIGHT_DTYPE = np.float32  # half the memory of float64
SCORE_DTYPE = np.float32  # scores accumulate in the weights' dtype (see _score_into)
#: a score row holds one slot after its chunks' (index ``n_docs``): where the postings of removed rows land, which
#: ``bm25_tombstones.TombstonedWeights`` numbers ``n_docs`` instead of selecting them out of every query term's list
SPARE_SLOTS = 1


@dataclass(frozen=True)
class BM25Parameters:
    """The parameters every variant reads (``delta`` only BM25L/BM25+/DashAI's, ``epsilon`` only Okapi)."""

    variant: str = "okapi"
    k1: float = 1.5
    b: float = 0.75
    delta: float = 1.0
    epsilon: float = 0.25

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ConfigError(f"variant: {self.variant!r} is not one of {', '.join(VARIANTS)}")
        if not self.k1 >= 0:  # 0: binary tf (every variant's tf part is 1, or tf for BM25L, where tf > 0)
            raise ConfigError(f"k1: must be >= 0, got {self.k1}")
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


def length_norm(doc_lengths: np.ndarray, b: float, average_length: float | None = None) -> np.ndarray:
    """``norm = 1 - b + b * dl / avgdl``; an all-empty corpus (avgdl 0) gets norm 1-b+0. ``avgdl`` is the mean of
    ``doc_lengths`` unless ``average_length`` gives a corpus's (texts scored against that corpus's statistics)."""
    if average_length is not None:
        avgdl = average_length
    else:
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


def idf_dashai(df: np.ndarray, n_docs: int, delta: float) -> np.ndarray:
    """DashAI's BM25 idf: Lucene's plus ``delta`` (its "IDF smoothing"), for the terms present in the corpus."""
    present = _present(df)
    return np.where(present, idf_lucene(df, n_docs) + delta, 0.0)


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
    if params.variant == "dashai":
        return idf_dashai(df, n_docs, params.delta)
    return idf_lucene(df, n_docs)


def variant_tf(params: BM25Parameters, tf: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """The tf part of ``params.variant`` for entries with ``tf > 0``."""
    if params.variant in ("okapi", "dashai"):
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


class PostingWeights(Protocol):
    """What scoring reads of a BM25 index: eager :class:`BM25Weights`, or the postings whose weights are derived
    at query time (:class:`dashrag.scoring.bm25_query_time.QueryTimeWeights`)."""

    @property
    def n_docs(self) -> int: ...

    @property
    def params(self) -> BM25Parameters: ...

    @property
    def nonoccurrence(self) -> np.ndarray: ...

    @property
    def vocab_size(self) -> int: ...

    def posting_parts(self, term: int, count: float) -> Sequence[tuple[np.ndarray, np.ndarray]]:
        """``term``'s posting list, in one or more parts (a segmented index's base and delta, not concatenated:
        a query does not copy a base list), each the chunks and their weights times ``count``. A chunk lies in one
        part at most, so adding the parts one after the other adds each chunk's weight as the whole list would."""
        ...

    def restricted(self, rows: np.ndarray) -> PostingWeights:
        """The posting lists of ``rows`` alone, renumbered, with the whole corpus's statistics."""
        ...

    def eager(self) -> BM25Weights:
        """Every posting's weight (whole-vector distances, cosine, an engine's rows)."""
        ...

    def without_absent_constant(self) -> PostingWeights:
        """The same postings without BM25+'s absent-term constant (the plain inner product)."""
        ...

    def to_arrays(self) -> dict[str, np.ndarray]: ...

    def meta(self) -> dict: ...


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

    def postings(self, term: int, count: float) -> tuple[np.ndarray, np.ndarray]:
        """The chunks of ``term``'s posting list and their stored weights times ``count`` (views when 1)."""
        lo, hi = int(self.term_ptr[term]), int(self.term_ptr[term + 1])
        values = self.data[lo:hi] if count == 1 else self.data[lo:hi] * SCORE_DTYPE(count)
        return self.doc_ids[lo:hi], values

    def posting_parts(self, term: int, count: float) -> Sequence[tuple[np.ndarray, np.ndarray]]:
        return (self.postings(term, count),)

    def restricted(self, rows: np.ndarray) -> BM25Weights:
        return restrict_weights(self, rows)

    def eager(self) -> BM25Weights:
        return self

    def without_absent_constant(self) -> BM25Weights:
        return replace(self, nonoccurrence=np.zeros_like(self.nonoccurrence))

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
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping) -> BM25Weights:
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


def restrict_weights(weights: BM25Weights, rows: np.ndarray) -> BM25Weights:
    """The posting lists of the documents ``rows`` (ascending, unique) alone, renumbered ``0..len(rows)-1``.

    Why: a selective filter's query then adds only its documents' postings, into a row of their
    size, instead of every posting of its terms. The postings keep their order, so each kept
    document's score is the same float32 sum in the same order as in the whole index (exactly
    ``score_query(...)[rows]``), and the statistics (idf, lengths, BM25+'s constants) stay the
    whole corpus's: a filter changes no score.
    """
    kept, doc_ids, term_ptr = restricted_postings(weights.doc_ids, weights.term_ptr, weights.n_docs, rows)
    return BM25Weights(data=weights.data[kept], doc_ids=doc_ids, term_ptr=term_ptr,
                       nonoccurrence=weights.nonoccurrence, n_docs=len(rows), params=weights.params)


def restricted_postings(doc_ids: np.ndarray, term_ptr: np.ndarray, n_docs: int,
                        rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The term-major postings of the documents ``rows`` (ascending, unique) alone: (which postings are kept,
    their documents renumbered ``0..len(rows)-1``, the new ``term_ptr``); every layout's per-posting arrays are
    then cut with the same mask (:func:`restrict_weights`, ``QueryTimeWeights.restricted``)."""
    renumbered = np.full(n_docs, -1, dtype=np.int32)
    renumbered[rows] = np.arange(len(rows), dtype=np.int32)
    new_ids = renumbered[doc_ids]
    kept = new_ids >= 0
    kept_before = np.zeros(kept.shape[0] + 1, dtype=np.int64)  # kept postings before each position
    np.cumsum(kept, out=kept_before[1:])
    return kept, new_ids[kept], kept_before[term_ptr]


def _check_consistent(w: BM25Weights) -> None:
    """Raise :class:`PersistenceError` unless the arrays describe one valid posting matrix."""
    problems = posting_problems(w.doc_ids, w.term_ptr, w.data.shape[0] if w.data.ndim == 1 else -1, w.n_docs)
    if w.data.ndim != 1 or w.doc_ids.shape != w.data.shape:
        problems.append("data and doc_ids differ in length")
    if w.nonoccurrence.shape != (max(w.term_ptr.shape[0] - 1, 0),):
        problems.append("nonoccurrence does not match the vocabulary")
    if problems:
        raise PersistenceError("BM25 weights: " + "; ".join(problems))


def posting_problems(doc_ids: np.ndarray, term_ptr: np.ndarray, nnz: int, n_docs: int) -> list[str]:
    """What is wrong with term-major postings of ``nnz`` entries over ``n_docs`` documents (empty: nothing), the
    checks every saved layout shares before its own arrays' (a truncated or edited state is an error, never a
    wrong score)."""
    problems = []
    if not (np.issubdtype(doc_ids.dtype, np.integer) and np.issubdtype(term_ptr.dtype, np.integer)):
        problems.append("doc_ids and term_ptr must hold integers")
    if term_ptr.ndim != 1 or term_ptr.shape[0] < 1 or term_ptr[0] != 0 or term_ptr[-1] != nnz:
        problems.append("term_ptr does not span the postings")
    elif np.any(np.diff(term_ptr) < 0):
        problems.append("term_ptr is not monotone")
    if nnz > 0 and doc_ids.shape == (nnz,) and (doc_ids.min() < 0 or doc_ids.max() >= n_docs):
        problems.append("a posting names a document outside 0..n_docs-1")
    return problems


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
    import scipy.sparse as sp

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


def _score_into(weights: PostingWeights, term_ids: np.ndarray, term_counts, out: np.ndarray,
                nonoccurrence: bool = True) -> None:
    """Write one query's BM25 scores into ``out`` (its row, n_docs float32, and :data:`SPARE_SLOTS` after them,
    whose value means nothing), in place.

    Each query term adds its posting list with one ``np.add.at`` over views of
    the index: no copy of the postings is gathered, so the working memory is the
    row itself. Measured on SciFact (bench/bench_bm25.py), this is faster than
    gathering every posting of a block of queries into one ``np.bincount`` (the
    sparse product ``Q @ W.T`` in one call) and needs a tenth of its memory; the
    Python loop runs once per query term, each step a whole posting list
    (docs/architecture.md, "Decisions"). The row is float32 like the stored
    weights (``np.add.at``'s fast path needs one dtype): over SciFact's test
    queries (up to 22 terms) the sum stays within 2e-7 relative of float64, and
    the parity tests against rank_bm25 hold at 1e-6. ``term_counts`` ``None``
    means each term once. BM25+ adds its per-query constant
    ``sum_i c_i * nonoccurrence[t_i]`` to every document, unless ``nonoccurrence``
    is false (the plain product with the stored matrix).
    """
    out.fill(0)
    term_ids = np.asarray(term_ids)
    counts = [1] * len(term_ids) if term_counts is None else np.asarray(term_counts).tolist()
    for term, count in zip(term_ids.tolist(), counts):
        for doc_ids, values in weights.posting_parts(term, count):
            np.add.at(out, doc_ids, values)
    if nonoccurrence and weights.params.variant == "bm25plus":
        out += absent_term_score(weights, term_ids, term_counts)


def absent_term_score(weights: PostingWeights, term_ids, term_counts=None) -> SCORE_DTYPE:
    """What every document scores for the query's terms it lacks: BM25+'s
    ``sum_i c_i * nonoccurrence[t_i]``, 0 for the other variants. In the score dtype,
    exactly as :func:`_score_into` adds it, so a document that matches no term scores
    exactly this (a retriever's "no hit" floor)."""
    if weights.params.variant != "bm25plus" or len(term_ids) == 0:
        return SCORE_DTYPE(0)
    counts = np.ones(len(term_ids)) if term_counts is None else np.asarray(term_counts, dtype=np.float64)
    return SCORE_DTYPE(np.dot(counts, weights.nonoccurrence[np.asarray(term_ids)].astype(np.float64)))


def _score_rows(weights: PostingWeights, row_ptr: np.ndarray, term_ids: np.ndarray, term_counts,
                nonoccurrence: bool = True) -> np.ndarray:
    """``S[r] = Q[r] @ W.T`` (+ BM25+'s constant) for the CSR arrays ``(row_ptr, term_ids,
    term_counts)`` of a query matrix ``Q``: a dense (rows x n_docs) float32 block."""
    n_rows = row_ptr.shape[0] - 1
    scores = np.empty((n_rows, weights.n_docs + SPARE_SLOTS), dtype=SCORE_DTYPE)
    for row in range(n_rows):
        lo, hi = row_ptr[row], row_ptr[row + 1]
        _score_into(weights, term_ids[lo:hi], None if term_counts is None else term_counts[lo:hi], scores[row],
                    nonoccurrence)
    return scores[:, :weights.n_docs]


def _as_query_matrix(query_counts: sp.spmatrix, vocab_size: int) -> sp.csr_matrix:
    import scipy.sparse as sp

    q = sp.csr_matrix(query_counts)
    if q.shape[1] != vocab_size:
        raise QueryError(f"query matrix has {q.shape[1]} terms, the index has {vocab_size}")
    return q


def score_queries(query_counts: sp.spmatrix, weights: PostingWeights) -> np.ndarray:
    """BM25 scores of a batch: ``S = Q @ W.T + Q @ nonoccurrence`` (n_queries x n_docs, float32).

    ``Q`` holds each query's token *counts* (n_queries x vocab), as rank_bm25
    adds a repeated query token once per occurrence.
    """
    q = _as_query_matrix(query_counts, weights.vocab_size)
    return _score_rows(weights, q.indptr, q.indices, q.data)


def score_query(term_ids, weights: PostingWeights, term_counts=None) -> np.ndarray:
    """BM25 scores of one query given its in-vocabulary term ids (repeats allowed), shape (n_docs,).

    The same product as :func:`score_queries` for one row, without building a
    sparse matrix: a single query is latency-bound.
    """
    term_ids = np.asarray(term_ids, dtype=np.int64)
    if term_ids.size and (term_ids.min() < 0 or term_ids.max() >= weights.vocab_size):
        raise QueryError(f"term ids must lie in 0..{weights.vocab_size - 1}")
    scores = np.empty(weights.n_docs + SPARE_SLOTS, dtype=SCORE_DTYPE)
    _score_into(weights, term_ids, term_counts, scores)
    return scores[:weights.n_docs]


def weight_rows(weights: BM25Weights) -> sp.csr_matrix:
    """The weights as the n_docs x vocab matrix ``W`` (one row per document), for whole-vector distances."""
    import scipy.sparse as sp

    return sp.csc_matrix((weights.data, weights.doc_ids, weights.term_ptr),
                         shape=(weights.n_docs, weights.vocab_size)).tocsr()


def document_norms(weights: BM25Weights) -> np.ndarray:
    """Euclidean norm of each document's row of stored weights, ``||W[d, :]||``."""
    squares = np.square(weights.data, dtype=np.float64)
    return np.sqrt(np.bincount(weights.doc_ids, weights=squares, minlength=weights.n_docs))


def cosine_scores(query_counts: sp.spmatrix, weights: PostingWeights, doc_norms: np.ndarray) -> np.ndarray:
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
    dots = _score_rows(weights, q.indptr, q.indices, q.data, nonoccurrence=False).astype(np.float64)
    query_norms = np.sqrt(np.asarray(q.multiply(q).sum(axis=1), dtype=np.float64).ravel())
    denominator = query_norms[:, None] * doc_norms[None, :]
    return np.divide(dots, denominator, out=np.zeros_like(dots), where=denominator > 0)


# ---------------------------------------------------------------- top-k


def _check_restriction(allowed: np.ndarray | None, n_docs: int) -> None:
    if allowed is not None and np.shape(allowed)[-1] != n_docs:
        raise QueryError(f"restriction covers {np.shape(allowed)[-1]} documents, the index has {n_docs}")


def top_k(scores: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best documents of one score vector: (indices, scores), best first.

    :func:`dashrag.core.ranking.top_k_rows`, the selection every leaf uses: ties go
    to the lower index, also at the k-th place, and ``allowed`` (a boolean per
    document) excludes documents *before* selection, so k come back wherever k are
    allowed.
    """
    _check_restriction(allowed, scores.shape[-1])
    rows = ranking.top_k_rows(scores, int(k), allowed)
    return rows, scores[rows]


@dataclass(frozen=True)
class TopK:
    """The best documents of every query of a batch, best first, as two (n_queries, k) arrays:
    ``ids`` (int32, as the index stores them) and ``scores``; a row with fewer than k
    selectable documents is padded with id -1 and score -inf. Two arrays for the whole
    batch, not two per query: an answer costs 8 bytes per hit and no per-query objects
    (bm25s answers the same way)."""

    ids: np.ndarray
    scores: np.ndarray

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Query ``i``'s (ids, scores) without the padding."""
        n = int(np.count_nonzero(self.ids[i] >= 0))
        return self.ids[i, :n], self.scores[i, :n]

    def rows(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self.row(i) for i in range(len(self))]


def top_k_batch(
    query_counts: sp.spmatrix,
    weights: PostingWeights,
    k: int,
    allowed: np.ndarray | None = None,
) -> TopK:
    """Top-k of every query of a batch: score, restrict, select, one query at a time into one row.

    Only the (n_queries, k) answer spans the batch, so a batch of any size needs
    the memory of one row of scores (plus the selection's scratch). Scoring
    several queries into a block first and selecting over the block bought no
    speed once scoring went posting list by posting list (:func:`_score_into`)
    and cost a block's memory (bench/bench_bm25.py). ``allowed`` is one boolean
    vector for all queries or one row per query; selection is :func:`top_k`.
    """
    q = _as_query_matrix(query_counts, weights.vocab_size)
    _check_restriction(allowed, weights.n_docs)
    per_query_mask = allowed is not None and np.ndim(allowed) == 2
    k = int(k)
    found = TopK(np.full((q.shape[0], k), -1, dtype=np.int32), np.full((q.shape[0], k), -np.inf, dtype=SCORE_DTYPE))
    row = np.empty(weights.n_docs + SPARE_SLOTS, dtype=SCORE_DTYPE)
    for i in range(q.shape[0]):
        lo, hi = q.indptr[i], q.indptr[i + 1]
        _score_into(weights, q.indices[lo:hi], q.data[lo:hi], row)
        best, values = top_k(row[:weights.n_docs], k, allowed[i] if per_query_mask and allowed is not None else allowed)
        found.ids[i, :best.shape[0]] = best
        found.scores[i, :best.shape[0]] = values
    return found
