"""The keyword-index contract: where a BM25 node keeps its term weights and how it searches them.

A ``BM25Retriever`` analyses the chunks and the queries (its vectorizer) and computes
the BM25 weights (``scoring/bm25.py``); *where* the weights live is its nested ``index``
component (kind ``keyword_index``): in this process (``InMemoryKeywordIndex``, the
default, the node's own scoring), or on an engine (``QdrantKeywordIndex``,
``PgKeywordIndex``) by changing that one nested component.

Why exact parity holds: a BM25 score is a sum over the query's terms of a weight that
depends only on the term and the chunk, ``S(q, d) = Σ_t c_t · W[d, t]`` (``c_t``: the
term's count in the query). So an engine stores each chunk's row of ``W`` (the weights
the in-process index holds, term ids from the node's vocabulary) as a sparse vector,
and its sparse dot product with the query's term counts *is* the in-process score
(BM25+'s per-query constant for absent terms, which the stored rows leave out, is added
back by the node). Engines search exactly: sparse vectors have no approximate index.

An engine keyword index takes the same calls as an engine vector index (``add``,
``save_into``, ``load_from``; ownership record, overwrite rule, saved reference and
restriction filters are ``engine.py``'s) and answers
``search(queries, k, restriction, chunk_ids=None)``: per query (term ids, counts), the
rows and sums ``Σ c_t W[d, t]`` of the k best chunks that share a term with it, best
first, ties to the lower chunk id.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np

from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams
from dashrag.indexes.base import Hits, IndexIdentity
from dashrag.scoring.bm25 import BM25Parameters, BM25Weights, PostingWeights, bm25_weights

if TYPE_CHECKING:  # scipy, the filter language: imported where they are used, not by a lone query
    import scipy.sparse as sp

    from dashrag.core.restriction import Restriction
    from dashrag.scoring.count_segments import CountSegments

P = TypeVar("P", bound=ComponentParams)
QueryTerms = tuple[np.ndarray, np.ndarray]  # a query's term ids (int) and their counts (float)


class KeywordIndex(ConfigObject[P], Generic[P]):
    """Base of the ``keyword_index`` components; see the module docstring for the contract."""

    #: the node scores in this process with its own arrays (True), or asks the index to search (False)
    in_process = False

    def weigh(self, counts: CountSegments, params: BM25Parameters, identity: IndexIdentity) -> PostingWeights:
        """Hold the weights of the chunks' term ``counts`` and return what the node scores with: here eager
        weights (every posting's, from the counts as one matrix), which an engine stores as each chunk's row
        (:meth:`add`); the in-process index keeps what derives them at query time instead, as segments whose
        base an add leaves alone (``keyword_in_memory.py``)."""
        weights = bm25_weights(counts.whole(), params)
        self.add(weights, identity)
        return weights

    def add(self, weights: BM25Weights, identity: IndexIdentity) -> None:
        """Hold the node's BM25 weights (computed over the whole corpus)."""
        raise NotImplementedError

    def save_into(self, folder: Path) -> None:
        raise NotImplementedError

    def load_from(self, folder: Path, identity: IndexIdentity) -> None:
        raise NotImplementedError

    def search(self, queries: list[QueryTerms], k: int, restriction: Restriction | None,
               chunk_ids: list[int] | None = None) -> list[Hits]:
        """Per query, the k best chunks that share a term with it (``chunk_ids``: among these chunks only)."""
        raise NotImplementedError


def document_weights(weights: BM25Weights) -> sp.csr_matrix:
    """``W`` chunk-major (n_chunks x vocab, float32): each chunk's stored BM25 weight per term, without
    zeros (a weight of 0 matches nothing in-process either)."""
    import scipy.sparse as sp

    term_major = sp.csr_matrix((weights.data, weights.doc_ids, weights.term_ptr),
                               shape=(weights.vocab_size, weights.n_docs))
    matrix = term_major.T.tocsr()
    matrix.eliminate_zeros()
    matrix.sort_indices()
    return matrix


def ranked_hits(ids: list[int], sums: list[float], rows: np.ndarray, k: int) -> Hits:
    """An engine's answer as hits: only positive sums (a chunk with no weight for the query's terms is no
    hit, as in-process), best first, ties to the lower chunk id (the in-process tie rule)."""
    order = sorted((i for i in range(len(ids)) if sums[i] > 0), key=lambda i: (-sums[i], ids[i]))[:k]
    return rows[order], np.asarray([sums[i] for i in order], dtype=np.float32)
