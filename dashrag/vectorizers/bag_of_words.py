"""BagOfWordsConverter: text → term-count vectors, over scikit-learn's CountVectorizer.

scikit-learn does the counting, n-grams, document-frequency cut-offs and
vocabulary; this component adds Snowball stemming (PyStemmer), applied to words
*before* n-grams are formed and after stop words are removed (as bm25s does), and
a pickle-free save: the vocabulary is written as a JSON list of terms in column
order, from which the vectorizer is rebuilt exactly.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Callable, Literal, Mapping

import numpy as np
import scipy.sparse as sp
from pydantic import Field
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams, less_or_equal
from dashrag.core.persistence import atomic_write_json, load_json
from dashrag.core.registry import register
from dashrag.errors import PersistenceError, RetrievalError

TOKEN_PATTERN = r"(?u)\b\w\w+\b"


class BagOfWordsParams(ComponentParams):
    analyzer: Literal["word", "char", "char_wb"] = Field("word", description="Count words, or character n-grams.")
    lowercase: bool = Field(True, description="Lower-case text before counting.")
    ngram_min: int = Field(1, ge=1, description="Smallest n-gram length.")
    ngram_max: int = Field(1, ge=1, description="Largest n-gram length.")
    stop_words: Literal["english"] | None = Field(None, description="Remove these stop words (None: keep all).")
    strip_accents: Literal["ascii", "unicode"] | None = Field(None, description="Remove accents before counting.")
    min_df: float = Field(0.0, ge=0, description="Drop terms in fewer documents: a fraction if <= 1, else a count.")
    max_df: float = Field(1.0, gt=0, description="Drop terms in more documents: a fraction if <= 1, else a count.")
    max_features: int | None = Field(None, ge=1, description="Keep only the most frequent terms.")
    stemmer: str | None = Field(None, description="Snowball stemmer language (e.g. 'english'); None: no stemming.")
    custom_stop_words: list[str] | None = Field(None, description=(
        "More words to remove, on top of stop_words (compared after lower-casing when lowercase is on)."))
    drop_source_columns: bool = Field(False, description=(
        "Accepted so DashAI configs load; DashAI drops a dataset's text columns after converting them, "
        "dashrag has no columns, so the value changes nothing."))

    RULES = (less_or_equal("ngram_min", "ngram_max"),)
    ALIASES = {"lower_bound_ngrams": "ngram_min", "upper_bound_ngrams": "ngram_max"}  # DashAI's names

    def stop_word_set(self) -> frozenset[str] | None:
        """The words removed before counting: the named list and the custom words (None: none)."""
        words = set(ENGLISH_STOP_WORDS) if self.stop_words == "english" else set()
        if self.custom_stop_words:
            words.update(w.lower() if self.lowercase else w for w in self.custom_stop_words)
        return frozenset(words) if words else None


def _as_list(words: frozenset[str] | None) -> list[str] | None:
    """scikit-learn takes a stop-word list (sorted: the vectorizer's params stay reproducible)."""
    return None if words is None else sorted(words)


def _df_bound(value: float) -> int | float:
    """scikit-learn reads an int as a document count and a float as a fraction; 1.0 stays 'all documents'."""
    return int(value) if value > 1 else float(value)


@register(
    kind="vectorizer",
    icon="Hash",
    category="keyword",
    en=("Bag of words", "Counts words or n-grams per text, with optional stop words and stemming."),
    es=("Bolsa de palabras", "Cuenta palabras o n-gramas por texto, con palabras vacías y lematización opcionales."),
    representation={
        "en": "{analyzer} {ngram_min}-{ngram_max}-grams",
        "es": "{analyzer}, n-gramas de {ngram_min} a {ngram_max}",
    },
)
class BagOfWordsConverter(ConfigObject[BagOfWordsParams]):
    SCHEMA = BagOfWordsParams

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._vectorizer: CountVectorizer | None = None
        self._analyze: Callable[[str], list[str]] | None = None

    def _validate_stemmer(self) -> None:
        if self.params.stemmer:
            import Stemmer

            if self.params.stemmer not in Stemmer.algorithms():
                raise RetrievalError(
                    f"unknown stemmer {self.params.stemmer!r}; known: {', '.join(Stemmer.algorithms())}"
                )

    def analyzer(self) -> Callable[[str], list[str]] | str:
        """The text → terms function: scikit-learn's own unless stemming is on."""
        p = self.params
        if not p.stemmer or p.analyzer != "word":
            return p.analyzer
        import Stemmer

        self._validate_stemmer()
        stem = Stemmer.Stemmer(p.stemmer).stemWords
        base = CountVectorizer(lowercase=p.lowercase, strip_accents=p.strip_accents, token_pattern=TOKEN_PATTERN)
        preprocess, tokenize = base.build_preprocessor(), base.build_tokenizer()
        stop = p.stop_word_set() or frozenset()
        lo, hi = p.ngram_min, p.ngram_max

        def analyze(text: str) -> list[str]:
            words = stem([w for w in tokenize(preprocess(text)) if w not in stop])
            if hi == 1:
                return words
            return [" ".join(words[i : i + n]) for n in range(lo, hi + 1) for i in range(len(words) - n + 1)]

        return analyze

    def _make(self, vocabulary: Mapping[str, int] | None = None) -> CountVectorizer:
        p = self.params
        analyzer = self.analyzer()
        stop_words = _as_list(p.stop_word_set()) if p.custom_stop_words else p.stop_words
        kwargs = {} if callable(analyzer) else {
            "lowercase": p.lowercase, "strip_accents": p.strip_accents, "stop_words": stop_words,
            "ngram_range": (p.ngram_min, p.ngram_max), "token_pattern": TOKEN_PATTERN,
        }
        return CountVectorizer(analyzer=analyzer, min_df=_df_bound(p.min_df), max_df=_df_bound(p.max_df),
                               max_features=p.max_features, vocabulary=vocabulary, dtype=np.float32, **kwargs)

    def fit_transform(self, texts: list[str]) -> sp.csr_matrix:
        self._vectorizer, self._analyze = self._make(), None
        try:
            return self._vectorizer.fit_transform(texts).tocsr()
        except ValueError as exc:  # e.g. every term pruned by min_df/max_df
            raise RetrievalError(f"{self.component_name}: cannot build a vocabulary ({exc})") from None

    def _fitted(self) -> CountVectorizer:
        if self._vectorizer is None:
            raise RetrievalError(f"{self.component_name}: not fitted")
        return self._vectorizer

    def term_counts(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(vocabulary ids, counts) of one text's terms, ids ascending; unknown terms are dropped."""
        vectorizer = self._fitted()
        if self._analyze is None:
            self._analyze = vectorizer.build_analyzer()
        vocabulary = vectorizer.vocabulary_
        counts = Counter(i for i in map(vocabulary.get, self._analyze(text)) if i is not None)
        ids = sorted(counts)  # a Counter over a query's few terms: several times faster than np.unique
        return np.array(ids, dtype=np.int64), np.array([counts[i] for i in ids], dtype=np.int64)

    def transform(self, texts: list[str]) -> sp.csr_matrix:
        """Counts over the fitted vocabulary: the same matrix as scikit-learn's ``transform``,
        built directly from the analyzer and the vocabulary, which is several times faster
        for the short texts queries are."""
        shape = (len(texts), len(self._fitted().vocabulary_))
        rows = [self.term_counts(text) for text in texts]
        if not rows:
            return sp.csr_matrix(shape, dtype=np.float32)
        indptr = np.concatenate([[0], np.cumsum([ids.size for ids, _ in rows])])
        data = np.concatenate([counts for _, counts in rows]).astype(np.float32)
        return sp.csr_matrix((data, np.concatenate([ids for ids, _ in rows]), indptr), shape=shape)

    @property
    def vocabulary(self) -> list[str]:
        return list(self._fitted().get_feature_names_out())

    def _save(self, folder: Path) -> None:
        atomic_write_json(folder / "vocabulary.json", self.vocabulary)

    def _load(self, folder: Path) -> None:
        terms = load_json(folder / "vocabulary.json")
        if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms) or len(set(terms)) != len(terms):
            raise PersistenceError(f"{folder / 'vocabulary.json'}: not a list of distinct terms")
        self._vectorizer, self._analyze = self._make({t: i for i, t in enumerate(terms)}), None
        self._vectorizer._validate_vocabulary()  # sets vocabulary_ from the fixed vocabulary
