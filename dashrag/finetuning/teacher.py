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

The BM25 here scores any text against the corpus's statistics (idf, average length), since a pseudo-query's
positive is its document without the query's words, a text the index does not hold. Its analysis and
parameters are the first stage's (``--first-stage``, ``keyword`` by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

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
class TeacherMargins:
    """score(query, positive) - score(query, negative) per triple, by the hybrid teacher, and its parts."""

    margins: np.ndarray
    dense_margins: np.ndarray
    lexical_margins: np.ndarray
    lexical_weight: float

    def describe(self) -> dict[str, Any]:
        """The model card's account of the teacher."""
        return {"teacher": "the base model's cosine + lexical_weight x the first stage's BM25",
                "lexical_weight": round(self.lexical_weight, 6),
                "dense_margin_mean": round(float(self.dense_margins.mean()), 4),
                "dense_margin_std": round(float(self.dense_margins.std()), 4),
                "margin_mean": round(float(self.margins.mean()), 4),
                "margin_std": round(float(self.margins.std()), 4),
                "triples": int(self.margins.size),
                "triples_with_negative_margin": int((self.margins < 0).sum())}


@dataclass(frozen=True)
class HybridTeacher:
    """The untuned hybrid's margins: the base model's cosine (``encode``) and the first stage's BM25."""

    lexical: LexicalScorer

    def margins(self, encode: Encode, queries: Sequence[str], positives: Sequence[str],
                negatives: Sequence[str]) -> TeacherMargins:
        asked = encode(list(queries))
        dense = (np.einsum("ij,ij->i", asked, encode(list(positives)))
                 - np.einsum("ij,ij->i", asked, encode(list(negatives))))
        words = self.lexical.pair_scores(queries, positives) - self.lexical.pair_scores(queries, negatives)
        spread = float(words.std())
        weight = float(dense.std()) / spread if spread > 0 else 0.0
        return TeacherMargins(dense + weight * words, dense, words, weight)


__all__ = ["Encode", "HybridTeacher", "LexicalScorer", "TeacherMargins"]
