"""BM25Retriever: true BM25 ranking over the query's terms.

The score of a chunk is the sum, over the query's terms, of the variant's
term weight (Okapi/Robertson, BM25L, BM25+, Lucene; formulas and their parity
with rank-bm25 in :mod:`dashrag.scoring.bm25`). Weights are computed
once at fit time into posting lists, so a query is one scatter-add of each of
its terms' posting lists.

``similarity_function`` keeps the reference implementation's configs loading:
its vector similarities (``cosine``, ``dot``) compare the query's term vector
with the BM25-weighted chunk vectors. That is *not* BM25 ranking (cosine
rewards short chunks and undoes BM25's own length normalisation); the default,
``bm25``, is.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import numpy as np
import scipy.sparse as sp
from pydantic import Field

from dashrag.core.params import ComponentParams, ComponentSpec, component_field, spec
from dashrag.core.persistence import atomic_write_json, load_array, load_json, save_array
from dashrag.core.registry import register
from dashrag.core.retriever import UnitRetriever
from dashrag.errors import PersistenceError
from dashrag.scoring import bm25 as scoring

STATE_ARRAYS = ("data", "doc_ids", "term_ptr", "nonoccurrence")


class BM25Params(ComponentParams):
    top_k: int = Field(5, ge=1, description="How many chunks to return.")
    variant: Literal["okapi", "bm25l", "bm25plus", "lucene"] = Field(
        "okapi", description="BM25 flavour: Okapi (Robertson), BM25L, BM25+ or Lucene's.")
    k1: float = Field(1.5, gt=0, description="Term-frequency saturation: higher lets repeated terms count longer.")
    b: float = Field(0.75, ge=0, le=1, description="Length normalisation: 0 ignores chunk length, 1 normalises fully.")
    delta: float = Field(0.0, ge=0, description="Lower bound added to a term's weight (BM25L and BM25+ only).")
    epsilon: float = Field(0.25, ge=0, description="Okapi only: a negative idf becomes epsilon times the mean idf.")
    similarity_function: Literal["bm25", "cosine", "dot"] = Field(
        "bm25",
        description="bm25: true BM25 ranking. cosine/dot: the reference's vector similarity (kept for old configs).",
    )
    vectorizer: ComponentSpec = component_field(
        "vectorizer",
        spec("BagOfWordsConverter"),
        description="How texts become term counts (tokens, stop words, stemming).",
    )


@register(
    kind="retriever",
    icon="Search",
    category="keyword",
    en=("BM25", "Ranks chunks by BM25 over the query's terms (Okapi, BM25L, BM25+, Lucene)."),
    es=("BM25", "Ordena fragmentos por BM25 sobre los términos de la consulta (Okapi, BM25L, BM25+, Lucene)."),
    representation={
        "en": "BM25 {variant} k1={k1} b={b} top {top_k}",
        "es": "BM25 {variant} k1={k1} b={b}, mejores {top_k}",
    },
)
class BM25Retriever(UnitRetriever[BM25Params]):
    def _parameters(self) -> scoring.BM25Parameters:
        p = self.params
        return scoring.BM25Parameters(variant=p.variant, k1=p.k1, b=p.b, delta=p.delta, epsilon=p.epsilon)

    def _fit(self) -> None:
        counts = self.nested["vectorizer"].fit_transform(self.require_infra().chunks.texts)
        self._set_weights(scoring.bm25_weights(counts, self._parameters()))

    def _set_weights(self, weights: scoring.BM25Weights) -> None:
        self._weights = weights
        self._norms = scoring.document_norms(weights) if self.params.similarity_function == "cosine" else None
        self._dot_weights = dataclasses.replace(weights, nonoccurrence=np.zeros_like(weights.nonoccurrence))

    def _encode_queries(self, queries: list[str]) -> list[str] | sp.csr_matrix:
        """The batch's term counts, analyzed in one pass; a lone BM25 query keeps its text
        (``_score_one`` is faster without a sparse matrix)."""
        if len(queries) == 1 and self.params.similarity_function == "bm25":
            return queries
        return self.nested["vectorizer"].transform(queries)

    def _score_and_floor(self, queries: list[str] | sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        # A hit shares at least one term with the query. Every stored weight is positive, so
        # that is a score above what a chunk matching nothing gets: 0, or BM25+'s constant.
        if isinstance(queries, list):
            if len(queries) == 1 and self.params.similarity_function == "bm25":
                return self._score_one(queries[0])
            queries = self.nested["vectorizer"].transform(queries)
        q = queries
        floors = np.zeros(q.shape[0])
        if self.params.similarity_function == "bm25" and self.params.variant == "bm25plus":  # else 0
            floors[:] = [
                scoring.absent_term_score(self._weights, q.indices[lo:hi], q.data[lo:hi])
                for lo, hi in zip(q.indptr[:-1], q.indptr[1:])
            ]
        return self._score_matrix(q), floors

    def _score_one(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """One query without building a sparse matrix: a single query is latency-bound."""
        ids, counts = self.nested["vectorizer"].term_counts(query)
        scores = scoring.score_query(ids, self._weights, counts)
        return scores[None, :], np.array([scoring.absent_term_score(self._weights, ids, counts)])

    def _score_block(self, queries: list[str]) -> np.ndarray:
        return self._score_matrix(self.nested["vectorizer"].transform(queries))

    def _score_matrix(self, q) -> np.ndarray:
        mode = self.params.similarity_function
        if mode == "cosine":
            assert self._norms is not None  # set by _set_weights for the cosine function
            return scoring.cosine_scores(q, self._weights, self._norms)
        if mode == "dot":  # the query-document inner product, without BM25+'s absent-term constant
            return scoring.score_queries(q, self._dot_weights)
        return scoring.score_queries(q, self._weights)

    def _save(self, folder: Path) -> None:
        for name, array in self._weights.to_arrays().items():
            save_array(folder / f"{name}.npy", array)
        atomic_write_json(folder / "weights.json", self._weights.meta())

    def _load(self, folder: Path) -> None:
        # memory-mapped (pages load on demand), seen as plain arrays: slicing an np.memmap runs Python code
        # per slice, which was a third of a loaded tree's batched query time (docs/performance.md)
        arrays = {name: np.asarray(load_array(folder / f"{name}.npy", mmap=True)) for name in STATE_ARRAYS}
        weights = scoring.BM25Weights.from_arrays(arrays, load_json(folder / "weights.json"))
        if weights.n_docs != len(self.require_infra().chunks):
            raise PersistenceError(
                f"{folder}: BM25 state covers {weights.n_docs} chunks, "
                f"the corpus has {len(self.require_infra().chunks)}"
            )
        if weights.vocab_size != len(self.nested["vectorizer"].vocabulary):
            raise PersistenceError(f"{folder}: BM25 state and vocabulary disagree on the number of terms")
        self._set_weights(weights)
