"""The corpus's own hybrid as a teacher: margins for distilling it into the dense model (issue 41).

Trained with MultipleNegativesRankingLoss on span pseudo-queries (a title or sentence cut from its abstract),
MiniLM learns that span task and loses on SciFact's claims (docs/finetuning.md). The untuned hybrid (BM25 + the
base model) ranks real queries better than the base model alone (SciFact: 0.6968 against 0.6451), and it exists
offline. GPL's recipe (MarginMSE against a teacher's margins) with that hybrid as the teacher, in place of GPL's
cross-encoder, asks the student to reproduce soft score differences instead of a hard "this one, none of the
others", so a mined negative that is in fact relevant costs little, and what the student is pulled towards is
a ranker that is better than itself. The teacher's score of (query, text) is the base model's cosine plus the
first stage's BM25 score times ``lexical_weight``: the ratio of the two margins' spreads over the training
triples, so both children weigh the same (as in the untuned hybrid), in the cosine's units, the ones the
student's margins are measured in.

The base model's half reads a negative's vector from the base model's cached corpus vectors (``CachedVectors``:
the embedding cache's, which the pipeline embeds before training for the keep-the-base comparison) instead of
encoding the document a second time, when those vectors were read at the tokens the teacher encodes at and the
text is the cached one, character for character: a negative is a corpus document whole. A positive is its
document without the query's words, a text no cache holds, so positives and queries are still encoded. On
SciFact a triple's encoding is then a query and one document, not a query and two (docs/finetuning.md).

The BM25 here scores any text against the corpus's statistics (idf, average length), since a pseudo-query's
positive is its document without the query's words, a text the index does not hold. Its analysis and
parameters are the first stage's (``--first-stage``, ``keyword`` by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from dashrag.scoring.bm25 import (
    BM25Parameters,
    bm25_weights,
    document_lengths,
    length_norm,
    nonoccurrence,
    score_queries,
    variant_idf,
    variant_tf,
)

Encode = Callable[[list[str]], np.ndarray]  # texts -> unit vectors (the base model)


@dataclass(frozen=True)
class LexicalScorer:
    """A first stage's BM25 over a corpus's statistics, for the corpus's documents or for any text."""

    vectorizer: Any  # the first stage's BagOfWordsConverter, fitted on the corpus
    counts: Any  # the corpus's (documents x terms) counts
    idf: np.ndarray
    average_length: float
    params: BM25Parameters

    @classmethod
    def fit(cls, first_stage: dict[str, Any], texts: Sequence[str]) -> LexicalScorer:
        """``first_stage``: a validated ``BM25Retriever`` config (its vectorizer, variant, ``k1``, ``b``)."""
        from dashrag.core.factory import build_as
        from dashrag.vectorizers.bag_of_words import BagOfWordsConverter

        given = first_stage["params"]
        vectorizer = build_as(given["vectorizer"], BagOfWordsConverter, "vectorizer")
        params = BM25Parameters(**{k: given[k] for k in ("variant", "k1", "b", "delta", "epsilon") if k in given})
        counts = vectorizer.fit_transform(list(texts)).tocsr()
        df = np.diff(counts.tocsc().indptr)
        return cls(vectorizer, counts, variant_idf(params, df, counts.shape[0]),
                   float(document_lengths(counts).mean()), params)

    def score_matrix(self, queries: Sequence[str]) -> np.ndarray:
        """(queries x corpus documents) scores."""
        return score_queries(self.vectorizer.transform(list(queries)), bm25_weights(self.counts, self.params))

    def pair_scores(self, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        """The score of each query against the text at its place (the texts need not be in the corpus): what
        ``score_matrix`` gives a corpus document, BM25+'s constant for the query's absent terms included."""
        asked = self.vectorizer.transform(list(queries)).tocsr()
        weights = self.vectorizer.transform(list(texts)).tocsr().astype(np.float64)
        norm = length_norm(document_lengths(weights), self.params.b, self.average_length)
        rows = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
        weights.data = self.idf[weights.indices] * variant_tf(self.params, weights.data, norm[rows])
        present = np.asarray(asked.multiply(weights).sum(axis=1)).ravel()
        return present + asked @ nonoccurrence(self.params, self.idf)


@dataclass(frozen=True)
class CachedVectors:
    """A corpus's vectors by the base model, by text, and the tokens a text was read at (the model's reading
    length when they were embedded): what the teacher reads instead of encoding a corpus document again."""

    rows: Mapping[str, int]  # a text -> its row of ``vectors`` (the first, where two documents share a text)
    vectors: np.ndarray  # unit rows, as the embedding cache holds them
    reading_length: int

    @classmethod
    def nothing(cls) -> CachedVectors:
        """No vectors held: every text is encoded (a teacher given no corpus vectors)."""
        return cls({}, np.zeros((0, 0), dtype=np.float32), 0)

    @classmethod
    def of(cls, texts: Sequence[str], vectors: np.ndarray, reading_length: int) -> CachedVectors:
        rows: dict[str, int] = {}
        for row, text in enumerate(texts):
            rows.setdefault(text, row)
        return cls(rows, vectors, reading_length)

    def held(self, texts: Sequence[str], length: int) -> list[bool]:
        """Which of ``texts`` are read from here by an encoder reading ``length`` tokens: none at another length
        (a vector read at 256 tokens is not what an encoder reading 128 gives)."""
        if length != self.reading_length:
            return [False] * len(texts)
        return [text in self.rows for text in texts]

    def read_or_encode(self, encode: Encode, texts: Sequence[str], length: int) -> tuple[np.ndarray, int]:
        """Unit vectors of ``texts``: the held ones read, the others encoded by ``encode`` (which reads ``length``
        tokens); and how many were read."""
        held = self.held(texts, length)
        if not any(held):  # (at another length, or nothing cached)
            return np.asarray(encode(list(texts))), 0
        read = [i for i, is_held in enumerate(held) if is_held]
        missing = [i for i, is_held in enumerate(held) if not is_held]
        out = np.empty((len(texts), self.vectors.shape[1]), dtype=np.float32)
        if missing:
            out[missing] = encode([texts[i] for i in missing])
        out[read] = self.vectors[[self.rows[texts[i]] for i in read]]
        return out, len(read)


@dataclass(frozen=True)
class TeacherMargins:
    """score(query, positive) - score(query, negative) per triple, by the hybrid teacher, and its parts."""

    margins: np.ndarray
    dense_margins: np.ndarray
    lexical_margins: np.ndarray
    lexical_weight: float
    negatives_read: int = 0  # negatives whose base vector came from the cached corpus vectors, not encoded

    def describe(self) -> dict[str, Any]:
        """The model card's account of the teacher."""
        return {"teacher": "the base model's cosine + lexical_weight x the first stage's BM25",
                "lexical_weight": round(self.lexical_weight, 6),
                "dense_margin_mean": round(float(self.dense_margins.mean()), 4),
                "dense_margin_std": round(float(self.dense_margins.std()), 4),
                "margin_mean": round(float(self.margins.mean()), 4),
                "margin_std": round(float(self.margins.std()), 4),
                "triples": int(self.margins.size),
                "triples_with_negative_margin": int((self.margins < 0).sum()),
                "negatives_read_from_cached_vectors": self.negatives_read}


@dataclass(frozen=True)
class HybridTeacher:
    """The untuned hybrid's margins: the base model's cosine (``encode``, or its ``cached`` corpus vectors for the
    negatives) and the first stage's BM25."""

    lexical: LexicalScorer
    cached: CachedVectors = field(default_factory=CachedVectors.nothing)

    def documents_per_triple(self, negatives: Sequence[str], length: int) -> float:
        """Documents the base model encodes per triple, on average, reading ``length`` tokens: the positive, and
        the negative unless its vector is cached (what the time budget plans each step's teacher cost with)."""
        if not negatives:
            return 2.0
        return 2.0 - sum(self.cached.held(negatives, length)) / len(negatives)

    def margins(self, encode: Encode, queries: Sequence[str], positives: Sequence[str],
                negatives: Sequence[str], *, length: int) -> TeacherMargins:
        """``encode``: the base model reading ``length`` tokens a text."""
        asked = encode(list(queries))
        against, read = self.cached.read_or_encode(encode, list(negatives), length)
        dense = (np.einsum("ij,ij->i", asked, encode(list(positives))) - np.einsum("ij,ij->i", asked, against))
        words = self.lexical.pair_scores(queries, positives) - self.lexical.pair_scores(queries, negatives)
        spread = float(words.std())
        weight = float(dense.std()) / spread if spread > 0 else 0.0
        return TeacherMargins(dense + weight * words, dense, words, weight, read)


__all__ = ["CachedVectors", "Encode", "HybridTeacher", "LexicalScorer", "TeacherMargins"]
