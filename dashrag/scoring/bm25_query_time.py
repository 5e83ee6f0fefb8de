"""BM25 weights derived at query time from term frequencies, chunk lengths and document frequencies.

Why: an eager weight (:func:`dashrag.scoring.bm25.bm25_weights`) depends on the corpus's statistics, the
number of chunks ``N``, each term's ``df`` and the average length ``avgdl``, and every added or removed chunk
moves ``N`` and ``avgdl``: so no stored weight survives an update exactly, and an update must weigh every
posting again (O(nonzero counts), docs/scale.md). Here the postings hold, per (term, chunk), only what those
statistics never change, and a query derives each weight from them and from the statistics of the tree's
current state, computed once per state (each term's idf, Okapi's mean idf, the length factor), never per query.

The tf part of Okapi, Lucene, BM25+ and DashAI is ``f / (f + k1 norm)`` (times ``k1 + 1`` for all but Lucene),
``norm = 1 - b + b dl / avgdl``. Divided by ``f``::

    f / (f + k1 norm) = 1 / (u + B x),   u = 1 + k1 (1 - b) / f,   x = dl / f,   B = k1 b / avgdl

``u`` and ``x`` depend on the posting and on the node's ``k1`` and ``b`` only (fixed for its life), ``B`` on the
state. So a query term costs three passes over its postings (``x B``, ``+ u``, ``scale / .``) before the
scatter-add an eager weight costs alone: the saturating form. BM25L's tf part (``c = f / norm`` inside a
ratio, times ``f``) has no such form: its postings hold ``f`` and ``dl`` themselves and the query evaluates
:func:`dashrag.scoring.bm25.tf_bm25l` on them (the lower-bounded form).

Exactness: the same formulas as the eager weights, evaluated in float32 where the eager ones are evaluated in
float64 and stored in float32; within 1e-6 relative of them (``tests/scoring/test_bm25_query_time.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, ClassVar, Mapping, Sequence

import numpy as np

from dashrag.errors import ConfigError, CorpusError, PersistenceError
from dashrag.scoring.bm25 import (
    WEIGHT_DTYPE,
    BM25Parameters,
    BM25Weights,
    document_lengths,
    nonoccurrence,
    posting_problems,
    restricted_postings,
    tf_bm25l,
    variant_idf,
)

if TYPE_CHECKING:
    import scipy.sparse as sp

LAYOUT = "query-time"  # the saved layout's name (weights.json's "layout"; eager weights have none)


# ---------------------------------------------------------------- the state's statistics


def average_length(lengths: np.ndarray) -> float:
    """``avgdl``: the mean chunk length, 0 for no chunks (the eager :func:`length_norm`'s rule)."""
    return float(lengths.sum(dtype=np.float64) / lengths.size) if lengths.size else 0.0


def length_factor(params: BM25Parameters, avgdl: float) -> float:
    """``B = k1 b / avgdl`` of the saturating form (0 when ``avgdl`` is 0: every norm is then ``1 - b``)."""
    return params.k1 * params.b / avgdl if avgdl > 0 else 0.0


def term_scale(params: BM25Parameters, idf: np.ndarray) -> np.ndarray:
    """What multiplies a term's tf part: ``idf (k1 + 1)`` (Okapi, BM25+, DashAI, BM25L), ``idf`` (Lucene)."""
    return idf if params.variant == "lucene" else idf * (params.k1 + 1.0)


# ---------------------------------------------------------------- the two forms


class SaturatingForm:
    """Okapi, Lucene, BM25+ and DashAI: postings hold ``u = 1 + k1 (1 - b) / f`` and ``x = dl / f``."""

    @staticmethod
    def posting_arrays(params: BM25Parameters, tf: np.ndarray, dl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        offset = (1.0 + params.k1 * (1.0 - params.b) / tf).astype(WEIGHT_DTYPE)
        slope = (dl / tf).astype(WEIGHT_DTYPE)
        return offset, slope

    @staticmethod
    def values(first: np.ndarray, second: np.ndarray, scale: float, params: BM25Parameters,
               avgdl: float) -> np.ndarray:
        """``scale / (u + B x)`` for one term's postings, float32, in one new array."""
        values = second * WEIGHT_DTYPE(length_factor(params, avgdl))
        values += first
        return np.divide(WEIGHT_DTYPE(scale), values, out=values)


class LowerBoundedForm:
    """BM25L: postings hold ``f`` and ``dl``; the query evaluates rank_bm25's BM25L tf part on them."""

    @staticmethod
    def posting_arrays(params: BM25Parameters, tf: np.ndarray, dl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return tf.astype(WEIGHT_DTYPE), dl.astype(WEIGHT_DTYPE)

    @staticmethod
    def values(first: np.ndarray, second: np.ndarray, scale: float, params: BM25Parameters,
               avgdl: float) -> np.ndarray:
        scaled = second * WEIGHT_DTYPE(params.b / avgdl) if avgdl > 0 else np.zeros_like(second)
        norm = scaled + WEIGHT_DTYPE(1.0 - params.b)
        part = tf_bm25l(first, norm, params.k1, params.delta)
        return (part * WEIGHT_DTYPE(scale / (params.k1 + 1.0))).astype(WEIGHT_DTYPE, copy=False)


FORMS: dict[str, type[SaturatingForm] | type[LowerBoundedForm]] = {
    "okapi": SaturatingForm, "lucene": SaturatingForm, "bm25plus": SaturatingForm, "dashai": SaturatingForm,
    "bm25l": LowerBoundedForm,
}


# ---------------------------------------------------------------- the postings


@dataclass(frozen=True)
class QueryTimeWeights:
    """Term-major postings of what the statistics never change (``first``, ``second``: the variant's form's
    per-posting arrays), each chunk's length, and the statistics of this state: each term's ``scale``
    (idf, times ``k1 + 1`` but for Lucene), ``avgdl``, BM25+'s ``nonoccurrence``. Scores as
    :class:`BM25Weights` does (the same ``postings``, ``restricted``, ``to_arrays`` and ``meta`` calls), the
    weights being derived per query term (:meth:`postings`)."""

    ARRAYS: ClassVar[tuple[str, ...]] = ("first", "second", "doc_ids", "term_ptr", "lengths")

    first: np.ndarray
    second: np.ndarray
    doc_ids: np.ndarray
    term_ptr: np.ndarray
    lengths: np.ndarray  # each chunk's length (float32): avgdl, and what a removal takes out of it
    scale: np.ndarray  # per term, float64
    nonoccurrence: np.ndarray  # per term, float32 (BM25+'s absent-term constant, 0 for the others)
    avgdl: float
    n_docs: int
    params: BM25Parameters

    @property
    def vocab_size(self) -> int:
        return int(self.term_ptr.shape[0] - 1)

    def postings(self, term: int, count: float) -> tuple[np.ndarray, np.ndarray]:
        """The chunks of ``term``'s posting list and their weights times ``count`` (the query's count)."""
        lo, hi = int(self.term_ptr[term]), int(self.term_ptr[term + 1])
        values = FORMS[self.params.variant].values(self.first[lo:hi], self.second[lo:hi],
                                                   float(self.scale[term]) * count, self.params, self.avgdl)
        return self.doc_ids[lo:hi], values

    def posting_parts(self, term: int, count: float) -> Sequence[tuple[np.ndarray, np.ndarray]]:
        return (self.postings(term, count),)

    def eager(self) -> BM25Weights:
        """The same weights computed for every posting at once (whole-vector distances, cosine)."""
        data = np.empty(self.first.shape[0], dtype=WEIGHT_DTYPE)
        for term in np.flatnonzero(np.diff(self.term_ptr)).tolist():
            lo, hi = int(self.term_ptr[term]), int(self.term_ptr[term + 1])
            data[lo:hi] = self.postings(term, 1.0)[1]
        return BM25Weights(data=data, doc_ids=self.doc_ids, term_ptr=self.term_ptr,
                           nonoccurrence=self.nonoccurrence, n_docs=self.n_docs, params=self.params)

    def restricted(self, rows: np.ndarray) -> QueryTimeWeights:
        """The posting lists of the chunks ``rows`` (ascending, unique) alone, renumbered ``0..len(rows)-1``,
        with the whole corpus's statistics (a filter changes no score; see :func:`bm25.restrict_weights`)."""
        kept, doc_ids, term_ptr = restricted_postings(self.doc_ids, self.term_ptr, self.n_docs, rows)
        return QueryTimeWeights(first=self.first[kept], second=self.second[kept], doc_ids=doc_ids,
                                term_ptr=term_ptr, lengths=self.lengths[rows], scale=self.scale,
                                nonoccurrence=self.nonoccurrence, avgdl=self.avgdl, n_docs=len(rows),
                                params=self.params)

    def without_absent_constant(self) -> QueryTimeWeights:
        """The same postings without BM25+'s absent-term constant (the plain inner product, ``dot``)."""
        return replace(self, nonoccurrence=np.zeros_like(self.nonoccurrence))

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in self.ARRAYS}

    def meta(self) -> dict:
        return {"layout": LAYOUT, "n_docs": int(self.n_docs), "params": asdict(self.params)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping) -> QueryTimeWeights:
        """From :meth:`to_arrays` / :meth:`meta` (arrays may be memory-mapped); the statistics are derived again
        (O(vocabulary + chunks), no pass over the postings but the range check). A truncated or edited state is a
        :class:`PersistenceError`, never a wrong score."""
        try:
            params = BM25Parameters(**meta["params"])
            n_docs = int(meta["n_docs"])
            parts = {name: arrays[name] for name in cls.ARRAYS}
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise PersistenceError(f"BM25 postings: incomplete or invalid state ({exc})") from exc
        _check_consistent(parts, n_docs)
        return with_statistics(parts["first"], parts["second"], parts["doc_ids"], parts["term_ptr"],
                               parts["lengths"], params)


def with_statistics(first: np.ndarray, second: np.ndarray, doc_ids: np.ndarray, term_ptr: np.ndarray,
                    lengths: np.ndarray, params: BM25Parameters) -> QueryTimeWeights:
    """The postings with the statistics of their state: N, each term's df (its posting list's length), avgdl,
    the idf and scale per term, Okapi's mean idf (inside :func:`idf_okapi`), BM25+'s constants."""
    n_docs = int(lengths.shape[0])
    scale, constant = per_term_statistics(params, np.diff(term_ptr), n_docs)
    return QueryTimeWeights(first=first, second=second, doc_ids=doc_ids, term_ptr=term_ptr, lengths=lengths,
                            scale=scale, nonoccurrence=constant, avgdl=average_length(lengths),
                            n_docs=n_docs, params=params)


def per_term_statistics(params: BM25Parameters, df: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each term's scale (its idf times what the variant multiplies it by) and BM25+'s absent-term constant, from
    the state's document frequencies and N: one derivation for one set of postings (:func:`with_statistics`) and
    for a base and a delta together (``bm25_segments.segment_weights``)."""
    idf = variant_idf(params, df, n_docs)
    return term_scale(params, idf), nonoccurrence(params, idf).astype(WEIGHT_DTYPE)


def query_time_weights(counts: sp.spmatrix, params: BM25Parameters, block: int = 1 << 20) -> QueryTimeWeights:
    """The postings of a document-term count matrix (n_docs x vocab), for weights derived at query time.

    The lengths are the row sums, as :func:`bm25.bm25_weights` takes them; duplicates are summed. The per-posting
    arrays are computed in float64 ``block`` postings at a time and stored as float32, so the peak stays near the
    size of the postings themselves (the eager weights' rule)."""
    import scipy.sparse as sp

    counts = sp.csr_matrix(counts)
    if counts.shape[0] == 0:
        raise CorpusError("cannot build a BM25 index over zero documents")
    lengths = document_lengths(counts)
    postings = counts.tocsc()
    postings.sum_duplicates()
    postings.eliminate_zeros()
    doc_ids = np.array(postings.indices, dtype=np.int32)  # its own compact array (no view of a larger buffer)
    form = FORMS[params.variant]
    first = np.empty(doc_ids.shape[0], dtype=WEIGHT_DTYPE)
    second = np.empty(doc_ids.shape[0], dtype=WEIGHT_DTYPE)
    for lo in range(0, doc_ids.shape[0], block):
        hi = min(lo + block, doc_ids.shape[0])
        first[lo:hi], second[lo:hi] = form.posting_arrays(params, postings.data[lo:hi].astype(np.float64),
                                                          lengths[doc_ids[lo:hi]])
    term_ptr = postings.indptr.astype(np.int64)
    del postings
    return with_statistics(first, second, doc_ids, term_ptr, lengths.astype(WEIGHT_DTYPE), params)


def _check_consistent(parts: Mapping[str, np.ndarray], n_docs: int) -> None:
    first, second, doc_ids, term_ptr, lengths = (parts[name] for name in QueryTimeWeights.ARRAYS)
    nnz = first.shape[0] if first.ndim == 1 else -1
    problems = posting_problems(doc_ids, term_ptr, nnz, n_docs)
    if nnz < 0 or second.shape != (nnz,) or doc_ids.shape != (nnz,):
        problems.append("the posting arrays differ in length")
    if lengths.shape != (n_docs,):
        problems.append(f"lengths cover {lengths.shape} chunks, the state {n_docs}")
    if problems:
        raise PersistenceError("BM25 postings: " + "; ".join(problems))
