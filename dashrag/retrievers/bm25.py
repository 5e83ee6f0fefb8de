"""BM25Retriever: true BM25 ranking over the query's terms.

The score of a chunk is the sum, over the query's terms, of the variant's
term weight (Okapi/Robertson, BM25L, BM25+, Lucene; formulas and their parity
with rank-bm25 in :mod:`dashrag.scoring.bm25`). Weights are computed
once at fit time into posting lists, so a query is one scatter-add of each of
its terms' posting lists.

Where the weights live is the nested ``index`` (kind ``keyword_index``): in this
process (``InMemoryKeywordIndex``, the default: the scoring above, unchanged), or on
an engine (``QdrantKeywordIndex`` sparse vectors, ``PgKeywordIndex`` a sparse table)
that stores each chunk's row of weights and answers the query's sparse dot product:
the same scores, the restriction inside the engine's search (``indexes/keyword_base.py``,
docs/engines.md). On an engine, ``bm25`` and ``dot`` work; ``cosine`` needs the
in-process index.

``similarity_function`` keeps the reference implementation's configs loading:
its vector similarities (``dot``, and DashAI's distances ``cosine``, ``euclidean``,
``l2``, ``cityblock``, ``l1``, ``manhattan``: :mod:`dashrag.scoring.distances`) compare
the query's term-count vector with the BM25-weighted chunk vectors; a score is then
``1 - distance`` and ``score_chunks`` gives DashAI's distance. That is *not* BM25
ranking (cosine rewards short chunks and undoes BM25's own length normalisation);
the default, ``bm25``, is. A config naming one of DashAI's distances and no
``variant`` is a DashAI config: it gets DashAI's weights (``variant: dashai``,
Lucene's idf plus ``delta``), so it ranks as DashAI does. Under the distances other
than cosine a chunk sharing no term with the query can still be near it: every
chunk is a candidate, as in DashAI.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Sequence, cast

import numpy as np
from pydantic import Field, model_validator

from dashrag.core.ask import Ask
from dashrag.core.digest import digest
from dashrag.core.params import ComponentParams, ComponentSpec, compatibility_field, component_field, spec, top_k_field
from dashrag.core.persistence import atomic_write_json, load_array, load_json, save_array
from dashrag.core.ranking import by_distance
from dashrag.core.registry import register
from dashrag.core.retriever import Result, UnitRetriever, check_query
from dashrag.documents.scored_chunks import ScoredChunks
from dashrag.errors import ConfigError, PersistenceError, RetrievalError
from dashrag.indexes.base import IndexIdentity
from dashrag.indexes.keyword_base import KeywordIndex, QueryTerms
from dashrag.scoring import bm25 as scoring
from dashrag.scoring.distances import DISTANCE_METRICS, distances, scores_from_distances

if TYPE_CHECKING:  # scipy is imported where a sparse matrix is made: a lone query needs none
    import scipy.sparse as sp

    from dashrag.documents.changes import CorpusChange
    from dashrag.indexes.keyword_in_memory import InMemoryKeywordIndex
    from dashrag.scoring.count_segments import CountSegments

ENGINE_STATE = "keyword.json"  # on an engine: what the node keeps besides the reference (n_docs, parameters)


class BM25Params(ComponentParams):
    top_k: int = top_k_field(5)
    variant: Literal["okapi", "bm25l", "bm25plus", "lucene", "dashai"] = Field(
        "okapi", description="BM25 flavour: Okapi (Robertson), BM25L, BM25+, Lucene's, or DashAI's (Lucene's idf "
                             "plus delta). A config naming a DashAI distance and no variant gets DashAI's.")
    k1: float = Field(1.5, ge=0, description=(
        "Term-frequency saturation: higher lets repeated terms count longer; 0: a term counts once, however often."))
    b: float = Field(0.75, ge=0, le=1, description="Length normalisation: 0 ignores chunk length, 1 normalises fully.")
    delta: float = Field(0.0, ge=0, description=(
        "BM25L and BM25+: lower bound added to a term's weight; DashAI's variant: added to every idf."))
    epsilon: float = Field(0.25, ge=0, description="Okapi only: a negative idf becomes epsilon times the mean idf.")
    similarity_function: Literal["bm25", "dot", "cosine", "cityblock", "euclidean", "l1", "l2", "manhattan"] = (
        compatibility_field(  # DashAI's vector similarities; bm25 is BM25 ranking (the module docstring)
            "bm25",
            description="bm25: true BM25 ranking. dot, or DashAI's distances (cosine, euclidean, l2, cityblock, l1, "
                        "manhattan) between the query's term counts and the BM25-weighted chunk vectors."))
    vectorizer: ComponentSpec = component_field(
        "vectorizer",
        spec("BagOfWordsConverter"),
        description="How texts become term counts (tokens, stop words, stemming).",
    )
    index: ComponentSpec = component_field("keyword_index", spec("InMemoryKeywordIndex"), description=(
        "Where the chunks' BM25 term weights live and are searched: in this process, as Qdrant sparse vectors "
        "or in a PostgreSQL sparse table (all exact, the same scores)."))

    ALIASES = {"BM25Vectorizer": "vectorizer"}  # DashAI's name of the field
    # a node added by hand starts as the keyword preset ranks: the declared defaults are DashAI's (see SUGGESTED)
    SUGGESTED = {"variant": "lucene",
                 "vectorizer": spec("BagOfWordsConverter", stop_words="english", stemmer="english")}

    @model_validator(mode="before")
    @classmethod
    def _dashai_weights_for_dashai_distances(cls, data: Any) -> Any:
        """A config that names one of DashAI's distances and no variant is DashAI's: it gets DashAI's weights."""
        if isinstance(data, dict) and "variant" not in data and data.get("similarity_function") in DISTANCE_METRICS:
            return {**data, "variant": "dashai"}
        return data


@register(
    kind="retriever",
    icon="Search",
    category="keyword",
    en=("BM25", "Ranks chunks by BM25 over the query's terms (Okapi, BM25L, BM25+, Lucene)."),
    es=("BM25", "Ordena fragmentos por BM25 sobre los términos de la consulta (Okapi, BM25L, BM25+, Lucene)."),
    representation={
        "en": "BM25 {variant} k1={k1} b={b} top {top_k}",
        "es": "BM25 {variant} k1={k1} b={b}, los {top_k} mejores",
    },
)
class BM25Retriever(UnitRetriever[BM25Params]):
    def _parameters(self) -> scoring.BM25Parameters:
        p = self.params
        return scoring.BM25Parameters(variant=p.variant, k1=p.k1, b=p.b, delta=p.delta, epsilon=p.epsilon)

    @property
    def index(self) -> KeywordIndex:
        return self.nested["index"]

    def _identity(self) -> IndexIdentity:
        """What the weights are: the corpus, the analysis and the BM25 parameters (the same identity gives
        the same weights, so an engine object recorded with it is this node's)."""
        p, vectorizer = self.params, self.nested["vectorizer"]
        what = {"vectorizer": vectorizer.to_config(), "variant": p.variant, "k1": p.k1, "b": p.b, "delta": p.delta,
                "epsilon": p.epsilon}
        column_order = vectorizer.column_order()  # None (sorted terms) keeps the keys of trees saved before adds
        key = digest(what if column_order is None else {**what, "column_order": column_order})  # appended columns
        return IndexIdentity(self.require_infra().chunks.fingerprint, key, "bm25-weights", len(vectorizer.vocabulary))

    @property
    def _by_distance(self) -> bool:
        """Ranked by one of DashAI's whole-vector distances (score ``1 - distance``)."""
        return self.params.similarity_function in DISTANCE_METRICS

    def _check_engine_function(self) -> None:
        if not self.index.in_process and self._by_distance:
            raise ConfigError(f"{self.component_name}: similarity_function {self.params.similarity_function!r} needs "
                              f"the in-process index (InMemoryKeywordIndex), not {self.index.component_name}; "
                              "use 'bm25' or 'dot'")

    def _fit(self) -> None:
        vectorizer = self.nested["vectorizer"]
        vectorizer.fit_transform(self.require_infra().chunks.texts)
        self._weigh(vectorizer.count_segments())

    def _update(self, change: CorpusChange) -> None:
        """Document frequencies, lengths and idf from the vectorizer's updated counts (only the new chunks
        were analysed; as segments, so the in-process index makes the postings of the added rows alone); a
        vectorizer that must be refit (document-frequency cut-offs) refits here."""
        counts = self.nested["vectorizer"].count_segments()
        if counts is None:
            self._fit()
        else:
            self._weigh(counts)

    def _weigh(self, counts: CountSegments) -> None:
        self._check_engine_function()
        weights = self.index.weigh(counts, self._parameters(), self._identity())  # query-time in process
        self._set_weights(weights)

    def _set_weights(self, weights: scoring.PostingWeights) -> None:
        """The weights the node scores with (in-process), or only their per-term constants (on an engine: what
        BM25+ adds for the query terms a chunk lacks, ``nonoccurrence``, with empty posting lists). DashAI's
        whole-vector distances read every posting's weight (``eager``: computed once here)."""
        if not self.index.in_process:
            eager = weights.eager()
            weights = dataclasses.replace(eager, data=np.zeros(0, dtype=eager.data.dtype),
                                          doc_ids=np.zeros(0, dtype=np.int32),
                                          term_ptr=np.zeros(eager.vocab_size + 1, dtype=np.int64))
        self._weights = weights
        every = weights.eager() if self._by_distance else None
        self._norms = scoring.document_norms(every) if every is not None and self._cosine else None
        self._rows = scoring.weight_rows(every) if every is not None else None
        self._dot_weights = weights.without_absent_constant()

    @property
    def _cosine(self) -> bool:
        return self.params.similarity_function == "cosine"

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
        if self._by_distance and self.params.similarity_function != "cosine":
            floors[:] = -np.inf  # every chunk has a distance to the query, matching or not (DashAI's candidates)
        if self.params.similarity_function == "bm25" and self.params.variant == "bm25plus":  # else 0
            floors[:] = [
                scoring.absent_term_score(self._weights, q.indices[lo:hi], q.data[lo:hi])
                for lo, hi in zip(q.indptr[:-1], q.indptr[1:])
            ]
        return self._score_matrix(q), floors

    def _score_one(self, query: str, weights: scoring.PostingWeights | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One query without building a sparse matrix (a single query is latency-bound), with the node's weights
        or ``weights`` (a filter's own postings)."""
        weights = self._weights if weights is None else weights
        ids, counts = self.nested["vectorizer"].term_counts(query)
        scores = scoring.score_query(ids, weights, counts)
        return scores[None, :], np.array([scoring.absent_term_score(weights, ids, counts)])

    def _score_matrix(self, q) -> np.ndarray:
        mode = self.params.similarity_function
        if mode == "cosine":
            assert self._norms is not None  # set by _set_weights for the cosine function
            return scoring.cosine_scores(q, self._weights, self._norms)
        if self._by_distance:
            assert self._rows is not None  # set by _set_weights for the distances
            return scores_from_distances(distances(q, self._rows, mode))
        if mode == "dot":  # the query-document inner product, without BM25+'s absent-term constant
            return scoring.score_queries(q, self._dot_weights)
        return scoring.score_queries(q, self._weights)

    # -- on an engine ----------------------------------------------------------------
    def _query_terms(self, queries: list[str]) -> list[QueryTerms]:
        q = self.nested["vectorizer"].transform(queries)
        return [(q.indices[lo:hi], q.data[lo:hi]) for lo, hi in zip(q.indptr[:-1], q.indptr[1:])]

    def _floor(self, terms: QueryTerms) -> float:
        """What the engine's sum lacks: BM25+'s constant for the query's terms (0 otherwise, and in 'dot')."""
        if self.params.similarity_function != "bm25":
            return 0.0
        return float(scoring.absent_term_score(self._weights, terms[0], terms[1]))

    def _retrieve_batch(self, queries: list[str], ask: Ask) -> list[Result]:
        if self.index.in_process:
            cut = self._cut_down(ask)
            if cut is None:
                return super()._retrieve_batch(queries, ask)
            return [self._rank_among(*cut, query, self.top_k(ask)) for query in queries]
        chunks = self.require_infra().chunks
        terms = self._query_terms(queries)
        found = self.index.search(terms, self.top_k(ask), ask.restriction)
        return [(ScoredChunks(chunks, rows, (sums + scoring.SCORE_DTYPE(self._floor(t))).astype(scoring.SCORE_DTYPE),
                              self.component_name), [], None) for t, (rows, sums) in zip(terms, found)]

    def _cut_down(self, ask: Ask) -> tuple[np.ndarray, scoring.PostingWeights] | None:
        """A selective filter's rows and their posting lists alone (``InMemoryKeywordIndex.postings_of``), for BM25
        ranking (the distances compare whole vectors); None: score every chunk and mask."""
        if ask.restriction is None or ask.restriction.only_filter is None or self.params.similarity_function != "bm25":
            return None
        index = cast("InMemoryKeywordIndex", self.index)  # in process: the in-memory index
        return index.postings_of(ask.restriction.row_mask(self.require_infra().chunks))

    def _rank_among(self, rows: np.ndarray, weights: scoring.PostingWeights, query: str, k: int) -> Result:
        """One query scored on ``rows`` alone (``weights``: their postings): the same scores as over every chunk."""
        scores, floors = self._score_one(query, weights)
        return self._hits(self.require_infra().chunks, scores[0], float(floors[0]), k, rows=rows), [], None

    def _score_block(self, queries: list[str]) -> np.ndarray:
        if not self.index.in_process:
            raise RetrievalError(f"{self.component_name}: scoring every chunk needs the in-process index, "
                                 f"this node searches {self.index.component_name}")
        return self._score_matrix(self.nested["vectorizer"].transform(queries))

    def to_distance(self, scores: np.ndarray) -> np.ndarray:
        """DashAI's distance under its distances (``1 - score``), the negated score otherwise."""
        return 1.0 - scores if self._by_distance else -scores

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        if self.index.in_process:
            return super().score_chunks(chunk_ids, query)
        query = check_query(query)
        chunks = self.require_infra().chunks
        rows = chunks.rows_of(chunk_ids)
        [terms] = self._query_terms([query])
        [(found, sums)] = self.index.search([terms], len(rows), None, chunk_ids=[int(i) for i in chunk_ids])
        scores = np.zeros(len(chunks), dtype=np.float64)
        scores[found] = sums
        return by_distance(chunk_ids, rows, -(scores[rows] + self._floor(terms)))

    # -- saved state -----------------------------------------------------------------
    def _save(self, folder: Path) -> None:
        self.index.save_into(folder)
        if not self.index.in_process:
            save_array(folder / "nonoccurrence.npy", self._weights.nonoccurrence)
            atomic_write_json(folder / ENGINE_STATE, self._weights.meta())

    def _load(self, folder: Path) -> None:
        self._check_engine_function()
        identity = self._identity()
        self.index.load_from(folder, identity)
        if self.index.in_process:
            self._set_weights(self.index.weights)  # type: ignore[attr-defined]
            return
        nonoccurrence = load_array(folder / "nonoccurrence.npy")
        if nonoccurrence.shape != (identity.dimension,):
            raise PersistenceError(f"{folder}: BM25 state and vocabulary disagree on the number of terms")
        self._set_weights(scoring.BM25Weights.from_arrays(
            {"data": np.zeros(0, dtype=scoring.WEIGHT_DTYPE), "doc_ids": np.zeros(0, dtype=np.int32),
             "term_ptr": np.zeros(identity.dimension + 1, dtype=np.int64), "nonoccurrence": nonoccurrence},
            load_json(folder / ENGINE_STATE)))
