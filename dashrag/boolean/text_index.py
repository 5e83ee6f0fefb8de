"""The text clause's index: which chunks contain a phrase, and their BM25 score for its words.

A text clause (``'mop'``, ``@'Microfibre'``) returns *every* chunk that contains the
phrase as a run of whole words after normalisation (``normalise_text``), scored by
BM25 of the phrase's words. Testing every chunk's text for every clause would read
the whole corpus per query, so the index keeps posting lists over the same
normalised words the matcher compares:

* the vocabulary is the case-folded words of ``normalise_words(text)``; a chunk can
  contain the phrase only if it holds each of the phrase's words, so the
  intersection of their posting lists (rarest first) is a superset of the matches,
  and ``PhraseMatcher`` confirms each candidate (word order, adjacency, case);
* a one-word, case-insensitive phrase needs no confirmation: holding the word *is*
  containing the phrase;
* a case-sensitive phrase looks up ``w.casefold()`` of its case-sensitive words.
  For almost all text that is the same word; for the few characters whose case
  folding changes the word breaks (``İ`` folds to ``i`` plus a combining dot, which
  is no letter) the chunk's extra keys are kept in ``extra_postings``, so the
  candidate set stays a superset and no match is ever lost.

Scores are Lucene's BM25 (``idf = log(1 + (N - df + 0.5) / (df + 0.5))``, always
positive, so every match scores above 0) over the chunk set, by the pure
functions of :mod:`dashrag.scoring.bm25`; its posting lists double as
the candidate lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from dashrag.boolean.normalise_text import PhraseMatcher, normalise_words
from dashrag.core.persistence import atomic_write_json, load_array, load_json, save_array
from dashrag.errors import PersistenceError
from dashrag.scoring import bm25 as scoring

STATE_ARRAYS = ("data", "doc_ids", "term_ptr", "nonoccurrence")
EMPTY_ROWS = np.empty(0, dtype=np.int64)


def chunk_keys(text: str) -> tuple[tuple[str, ...], frozenset[str]]:
    """The case-folded words of ``text`` (for BM25 and lookups) and the extra lookup keys that
    ``w.casefold()`` of its case-sensitive words adds (empty for nearly every text)."""
    words = normalise_words(text, case_sensitive=False)
    extra = frozenset(w.casefold() for w in normalise_words(text, case_sensitive=True)) - frozenset(words)
    return words, extra


def phrase_keys(phrase: str, case_sensitive: bool) -> tuple[str, ...]:
    """The keys a chunk must hold to be able to contain ``phrase`` (module docstring)."""
    if case_sensitive:
        return tuple(w.casefold() for w in normalise_words(phrase, case_sensitive=True))
    return normalise_words(phrase, case_sensitive=False)


@dataclass
class TextIndex:
    """Posting lists and BM25 weights over the normalised words of a chunk set's texts (rows)."""

    vocabulary: dict[str, int]
    weights: scoring.BM25Weights
    extra_postings: dict[str, np.ndarray]

    @classmethod
    def build(cls, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> TextIndex:
        vocabulary: dict[str, int] = {}
        indptr: list[int] = [0]
        indices: list[int] = []
        extra: dict[str, list[int]] = {}
        for row, text in enumerate(texts):
            words, extra_keys = chunk_keys(text)
            indices.extend(vocabulary.setdefault(w, len(vocabulary)) for w in words)
            indptr.append(len(indices))
            for key in extra_keys:
                extra.setdefault(key, []).append(row)
        counts = sp.csr_matrix(
            (
                np.ones(len(indices), dtype=np.float32),
                np.asarray(indices, dtype=np.int64),
                np.asarray(indptr, dtype=np.int64),
            ),
            shape=(len(texts), max(len(vocabulary), 1)),
        )
        weights = scoring.bm25_weights(counts, scoring.BM25Parameters(variant="lucene", k1=k1, b=b))
        return cls(vocabulary, weights, {k: np.asarray(v, dtype=np.int64) for k, v in extra.items()})

    @property
    def n_rows(self) -> int:
        return int(self.weights.n_docs)

    def postings(self, key: str, with_extra: bool) -> np.ndarray:
        """Sorted rows holding ``key`` as a word (and, ``with_extra``, as an extra key)."""
        term = self.vocabulary.get(key)
        rows = EMPTY_ROWS
        if term is not None:
            w = self.weights
            rows = np.asarray(w.doc_ids[w.term_ptr[term] : w.term_ptr[term + 1]], dtype=np.int64)
        extra = self.extra_postings.get(key) if with_extra else None
        return rows if extra is None else np.union1d(rows, extra)

    def candidates(self, phrase: str, case_sensitive: bool) -> np.ndarray:
        """Rows that hold every key of the phrase: a superset of its matches, sorted."""
        keys = set(phrase_keys(phrase, case_sensitive))
        if not keys:
            return EMPTY_ROWS
        lists = sorted((self.postings(k, with_extra=case_sensitive) for k in keys), key=len)
        rows = lists[0]
        for more in lists[1:]:
            if rows.size == 0:
                break
            rows = np.intersect1d(rows, more, assume_unique=True)
        return rows

    def bm25(self, phrase: str) -> np.ndarray:
        """BM25 (Lucene) of the phrase's case-folded words against every row."""
        words = normalise_words(phrase, case_sensitive=False)
        terms = [self.vocabulary[w] for w in words if w in self.vocabulary]
        if not terms:
            return np.zeros(self.n_rows)
        ids, counts = np.unique(np.asarray(terms, dtype=np.int64), return_counts=True)
        return scoring.score_query(ids, self.weights, counts.astype(np.float64))

    def search(
        self, phrase: str, case_sensitive: bool, texts: Sequence[str], allowed_rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, scores)`` of the rows (of those allowed) whose text contains the phrase, best first
        (ties to the lower row). ``texts`` are the indexed texts, by row."""
        rows = self.candidates(phrase, case_sensitive)
        if allowed_rows is not None and rows.size:
            rows = rows[allowed_rows[rows]]
        exact_lookup = not case_sensitive and len(normalise_words(phrase)) == 1
        if rows.size and not exact_lookup:
            matcher = PhraseMatcher(phrase, case_sensitive)
            rows = rows[np.fromiter((matcher.matches(texts[r]) for r in rows), dtype=bool, count=rows.size)]
        if rows.size == 0:
            return EMPTY_ROWS, np.empty(0)
        scores = self.bm25(phrase)[rows]
        order = np.lexsort((rows, -scores))
        return rows[order], scores[order]

    # -- persistence ---------------------------------------------------------
    def save(self, folder: Path) -> None:
        for name, array in self.weights.to_arrays().items():
            save_array(folder / f"text_{name}.npy", array)
        words = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        atomic_write_json(
            folder / "text_index.json",
            {
                "weights": self.weights.meta(),
                "vocabulary": words,
                "extra_postings": {k: v.tolist() for k, v in self.extra_postings.items()},
            },
        )

    @classmethod
    def load(cls, folder: Path, n_rows: int) -> TextIndex:
        meta = load_json(folder / "text_index.json")
        try:
            words, extra = meta["vocabulary"], meta["extra_postings"]
            arrays = {name: load_array(folder / f"text_{name}.npy", mmap=True) for name in STATE_ARRAYS}
            weights = scoring.BM25Weights.from_arrays(arrays, meta["weights"])
            vocabulary = {str(w): i for i, w in enumerate(words)}
            extra_postings = {str(k): np.asarray(v, dtype=np.int64) for k, v in extra.items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PersistenceError(f"{folder}/text_index.json: incomplete text index ({exc})") from None
        if weights.n_docs != n_rows:
            raise PersistenceError(f"{folder}: the text index covers {weights.n_docs} chunks, the corpus has {n_rows}")
        if max(len(vocabulary), 1) != weights.vocab_size:
            raise PersistenceError(f"{folder}: the text index's vocabulary and weights disagree on the number of words")
        return cls(vocabulary, weights, extra_postings)
