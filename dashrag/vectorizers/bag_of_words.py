"""BagOfWordsConverter: text → term-count vectors, over scikit-learn's CountVectorizer.

scikit-learn does the counting, n-grams, document-frequency cut-offs and
vocabulary at fit time; this component adds Snowball stemming (PyStemmer), applied
to words *before* n-grams are formed and after stop words are removed (as bm25s
does), and a pickle-free save: the vocabulary is written as a JSON list of terms in
column order (and the stop words as a JSON list), from which the analysis is rebuilt
exactly.

Neither the fit nor a query needs scikit-learn when every term is one word (the word
analyzer, 1-grams, no accent stripping: every preset): lower-casing, scikit-learn's token
pattern, the stop words (a copy of scikit-learn's English list), stemming and a dict
lookup are the whole analysis (:class:`WordSteps`), and importing scikit-learn would cost
a loaded keyword tree most of its start-up (bench/bench_cold_query.py) and a keyword build
job's worker process most of its CPU. Such a fit without document-frequency cut-offs or a
feature cap (accent stripping keeps scikit-learn's preprocessor) counts the terms itself
(:meth:`BagOfWordsConverter._fit_words`), giving scikit-learn's matrix array for array.
Other settings use scikit-learn's vectorizer (built from the saved vocabulary when a
loaded tree first needs it).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
from pydantic import Field, field_validator

from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams, Rule, compatibility_field, less_or_equal
from dashrag.core.persistence import atomic_write_json, load_json, load_sparse
from dashrag.core.registry import register
from dashrag.errors import PersistenceError, RetrievalError
from dashrag.scoring.count_segments import CountSegments
from dashrag.vectorizers.english_stop_words import ENGLISH_STOP_WORDS
from dashrag.vectorizers.token_counts import code_tokens, count_pairs

if TYPE_CHECKING:
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import CountVectorizer

    from dashrag.documents.changes import CorpusChange

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
#: PyStemmer's Snowball algorithms (``Stemmer.algorithms()``), a closed choice so a form draws a list and a
#: misspelt language is refused at validation, not at build (tests/vectorizers/test_bag_of_words.py keeps it equal).
Stemmers = Literal["arabic", "armenian", "basque", "catalan", "czech", "danish", "dutch", "dutch_porter", "english",
                   "esperanto", "estonian", "finnish", "french", "german", "greek", "hindi", "hungarian", "indonesian",
                   "irish", "italian", "lithuanian", "nepali", "norwegian", "persian", "polish", "porter", "portuguese",
                   "romanian", "russian", "serbian", "sesotho", "spanish", "swedish", "tamil", "turkish", "yiddish"]
STOP_WORDS_FILE = "stop_words.json"
COUNTS = "counts"  # the chunks' term counts (docs/updating.md), as counts.{data,indices,indptr,shape}.npy
COUNTS_SHAPE = f"{COUNTS}.shape.npy"


def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop words (what ``stop_words="english"`` removes at fit time), from the copy that
    spares importing scikit-learn."""
    return ENGLISH_STOP_WORDS


def _fractions_in_order(params: BagOfWordsParams) -> str | None:
    """DashAI's rule: ``min_df <= max_df`` (scikit-learn refuses the opposite); only comparable when both
    are fractions of the documents (a count above 1 and a fraction are not)."""
    if params.min_df <= 1 and params.max_df <= 1 and params.min_df > params.max_df:
        return f"min_df ({params.min_df}) must be <= max_df ({params.max_df})"
    return None


class BagOfWordsParams(ComponentParams):
    analyzer: Literal["word", "char", "char_wb"] = Field("word", description="Count words, or character n-grams.")
    lowercase: bool = Field(True, description="Lower-case text before counting.")
    ngram_min: int = Field(1, ge=1, le=10, description="Smallest n-gram length.")
    ngram_max: int = Field(1, ge=1, le=10, description="Largest n-gram length.")
    stop_words: Literal["english"] | None = Field(None, description="Remove these stop words (None: keep all).")
    strip_accents: Literal["ascii", "unicode"] | None = Field(None, description="Remove accents before counting.")
    min_df: float = Field(0.0, ge=0, description="Drop terms in fewer documents: a fraction if <= 1, else a count.")
    max_df: float = Field(1.0, gt=0, description="Drop terms in more documents: a fraction if <= 1, else a count.")
    max_features: int | None = Field(None, ge=1, le=10_000_000, description=(
        "Keep only the most frequent terms (None: all)."))
    stemmer: Stemmers | None = Field(None, description="Snowball stemmer language (e.g. 'english'); None: no stemming.")
    custom_stop_words: list[str] | None = Field(None, description=(
        "More words to remove, on top of stop_words (compared after lower-casing when lowercase is on)."))
    drop_source_columns: bool = compatibility_field(False, description=(
        "Accepted so DashAI configs load; DashAI drops a dataset's text columns after converting them, "
        "dashrag has no columns, so the value changes nothing."))

    @field_validator("min_df", "max_df")
    @classmethod
    def _fraction_or_count(cls, value: float) -> float:
        """Above 1 a bound is a count of documents, so a whole number: 1.5 is neither a fraction nor a count
        (DashAI refuses anything above 1.0; scikit-learn reads a whole number as a count, which dashrag keeps)."""
        if value > 1 and value != int(value):
            raise ValueError(f"{value} is neither a fraction of the documents (at most 1.0) nor a whole count of them")
        return value

    RULES = (less_or_equal("ngram_min", "ngram_max"), Rule(
        "le", ("min_df", "max_df"), "min_df must not exceed max_df when both are fractions", _fractions_in_order))
    # DashAI's names and spellings: its BM25 and TF-IDF vectorizers (BM25VectorizerModel, TFIDFVectorizerModel)
    ALIASES = {"lower_bound_ngrams": "ngram_min", "upper_bound_ngrams": "ngram_max"}
    SPLIT_ALIASES = {"ngram_range": ("ngram_min", "ngram_max")}
    # TF-IDF's "None", its "0: no limit" and its empty stop-word list (DashAI's placeholders)
    VALUE_ALIASES = {"strip_accents": (("None", None),), "max_features": ((0, None),), "stop_words": (([], None),)}

    def stop_word_set(self) -> frozenset[str] | None:
        """The words removed before counting: the named list and the custom words (None: none)."""
        words = set(english_stop_words()) if self.stop_words == "english" else set()
        if self.custom_stop_words:
            words.update(w.lower() if self.lowercase else w for w in self.custom_stop_words)
        return frozenset(words) if words else None


class WordSteps(NamedTuple):
    """The word analyzer as steps: text → words (preprocess, tokenize), then per word: stop, stem.

    scikit-learn's word analyzer and the stemming one both preprocess, tokenize, drop stop
    words and (the latter) stem; with 1-grams a term depends on its word alone, which lets
    a batch analyze each distinct word once (:meth:`BagOfWordsConverter.transform`).
    """

    preprocess: Callable[[str], str]
    tokenize: Callable[[str], list[str]]
    stop: frozenset[str]
    stem: Callable[[list[str]], list[str]] | None

    def words(self, text: str) -> list[str]:
        """The text's words before stop words and stemming."""
        return self.tokenize(self.preprocess(text))

    def terms(self, text: str) -> list[str]:
        return self.terms_of_words(self.words(text))[1]

    def terms_of_words(self, words: Iterable[str]) -> tuple[list[str], list[str]]:
        """The words that are not stop words, and the term each of them gives."""
        kept = [w for w in words if w not in self.stop]
        return kept, (self.stem(kept) if self.stem else kept)


def _as_list(words: frozenset[str] | None) -> list[str] | None:
    """scikit-learn takes a stop-word list (sorted: the vectorizer's params stay reproducible)."""
    return None if words is None else sorted(words)


def _df_bound(value: float) -> int | float:
    """scikit-learn reads an int as a document count and a float as a fraction; 1.0 stays 'all documents'."""
    return int(value) if value > 1 else float(value)


def _count_rows(terms: list[list[str]], column: dict[str, int], n_columns: int, dtype: np.dtype,
                index_type: np.dtype) -> sp.csr_matrix:
    """The term counts of texts already analysed (``terms``), over ``n_columns`` columns (``column``: a term's),
    each row sorted."""
    import scipy.sparse as sp

    rows = [Counter(column[t] for t in ts) for ts in terms]
    added = sp.csr_matrix((np.array([n for r in rows for n in r.values()], dtype=dtype),
                           np.array([c for r in rows for c in r], dtype=index_type),
                           np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(index_type)),
                          shape=(len(rows), n_columns))
    added.sort_indices()
    return added


def _identity(text: str) -> str:
    return text


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
    aliases=("BM25VectorizerModel", "TFIDFVectorizerModel"),  # DashAI's BM25 and TF-IDF vectorizers
)
class BagOfWordsConverter(ConfigObject[BagOfWordsParams]):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._vocabulary: dict[str, int] | None = None  # term → column, once fitted or loaded
        self._n_columns = 0  # the columns: the vocabulary's, and those a removal emptied (their terms gone)
        self._stop_words: frozenset[str] | None = None  # the stop words of the fit (None: not known yet)
        self._vectorizer: CountVectorizer | None = None  # scikit-learn's, built when needed
        self._steps: WordSteps | None = None
        self._analyze: Callable[[str], list[str]] | None = None
        self._counts: CountSegments | None = None  # the chunks' term counts, kept so an update counts only new ones
        self._saved_in: Path | None = None  # where the counts of a loaded tree can be read when an update needs them

    def _validate_stemmer(self) -> None:
        if self.params.stemmer:
            import Stemmer

            if self.params.stemmer not in Stemmer.algorithms():
                raise RetrievalError(
                    f"unknown stemmer {self.params.stemmer!r}; known: {', '.join(Stemmer.algorithms())}"
                )

    def _stop_set(self) -> frozenset[str]:
        if self._stop_words is None:
            self._stop_words = self.params.stop_word_set() or frozenset()
        return self._stop_words

    def _word_steps(self) -> WordSteps:
        p = self.params
        stem = None
        if p.stemmer:
            import Stemmer

            self._validate_stemmer()
            stem = Stemmer.Stemmer(p.stemmer).stemWords
        if p.strip_accents is None:  # scikit-learn's preprocessor, without importing it
            preprocess: Callable[[str], str] = str.lower if p.lowercase else _identity
        else:
            from sklearn.feature_extraction.text import CountVectorizer

            preprocess = CountVectorizer(lowercase=p.lowercase, strip_accents=p.strip_accents).build_preprocessor()
        return WordSteps(preprocess, re.compile(TOKEN_PATTERN).findall, self._stop_set(), stem)

    def single_word_steps(self) -> WordSteps | None:
        """The analysis as :class:`WordSteps` when every term is one word (word analyzer, 1-grams), else None."""
        p = self.params
        if p.analyzer != "word" or p.ngram_max != 1:
            return None
        if self._steps is None:
            self._steps = self._word_steps()
        return self._steps

    def analyzer(self) -> Callable[[str], list[str]] | str:
        """The text → terms function for fitting: scikit-learn's own unless stemming is on."""
        p = self.params
        if not p.stemmer or p.analyzer != "word":
            return p.analyzer
        steps = self._word_steps()
        lo, hi = p.ngram_min, p.ngram_max

        def analyze(text: str) -> list[str]:
            words = steps.terms(text)
            if hi == 1:
                return words
            return [" ".join(words[i : i + n]) for n in range(lo, hi + 1) for i in range(len(words) - n + 1)]

        return analyze

    def _make(self, vocabulary: dict[str, int] | None = None) -> CountVectorizer:
        from sklearn.feature_extraction.text import CountVectorizer

        p = self.params
        analyzer = self.analyzer()
        stop_words = _as_list(p.stop_word_set()) if p.custom_stop_words else p.stop_words
        kwargs = (
            {}
            if callable(analyzer)
            else {
                "lowercase": p.lowercase,
                "strip_accents": p.strip_accents,
                "stop_words": stop_words,
                "ngram_range": (p.ngram_min, p.ngram_max),
                "token_pattern": TOKEN_PATTERN,
            }
        )
        return CountVectorizer(
            analyzer=analyzer,
            min_df=_df_bound(p.min_df),
            max_df=_df_bound(p.max_df),
            max_features=p.max_features,
            vocabulary=vocabulary,
            dtype=np.float32,
            **kwargs,
        )

    def _fitted_vocabulary(self) -> dict[str, int]:
        if self._vocabulary is None:
            raise RetrievalError(f"{self.component_name}: not fitted")
        return self._vocabulary

    def _fitted_vectorizer(self) -> CountVectorizer:
        """scikit-learn's vectorizer for its analysis alone (analyzers other than single words): the terms are
        looked up in the vocabulary here, whose columns may have gaps (terms a removal took out) that scikit-learn's
        own vocabulary check refuses."""
        if self._vectorizer is None:
            self._vectorizer = self._make()
        return self._vectorizer

    def fit_transform(self, texts: list[str]) -> sp.csr_matrix:
        steps = self.single_word_steps()
        if steps is not None and self.prunes_nothing():
            self._vocabulary, counts = self._fit_words(texts, steps)
            self._vectorizer, self._analyze, self._counts = None, None, CountSegments.whole_base(counts)
            self._n_columns = counts.shape[1]
            return counts
        vectorizer = self._make()
        try:
            counts = vectorizer.fit_transform(texts).tocsr()
        except ValueError as exc:  # e.g. every term pruned by min_df/max_df
            raise RetrievalError(f"{self.component_name}: cannot build a vocabulary ({exc})") from None
        self._vectorizer, self._vocabulary, self._analyze = vectorizer, dict(vectorizer.vocabulary_), None
        self._counts, self._n_columns = CountSegments.whole_base(counts), counts.shape[1]
        return counts

    def _fit_words(self, texts: list[str], steps: WordSteps) -> tuple[dict[str, int], sp.csr_matrix]:
        """scikit-learn's ``CountVectorizer.fit_transform`` for single-word terms and no pruning, without importing
        scikit-learn (1.8 s of CPU, most of a keyword build job): the same vocabulary and the same matrix, array for
        array (tests/vectorizers/test_fit_without_scikit_learn.py), so a tree built either way is the same bytes.

        scikit-learn numbers the terms as they first occur, counts each text's terms, sorts each row by that
        number, then renumbers the columns in the terms' sorted order without re-sorting the rows; so here a
        row's entries stay ordered by the terms' first occurrence and the columns are the sorted terms. Each
        distinct word is analysed once (stop words, one stemming call), as :meth:`_transform_words` does."""
        import scipy.sparse as sp

        coded = code_tokens(texts, steps.words)
        kept, stems = steps.terms_of_words(coded.code_of_word)
        first_of_term: dict[str, int] = {}  # term → its number in order of first occurrence
        for stem in stems:
            first_of_term.setdefault(stem, len(first_of_term))
        if not first_of_term:
            raise RetrievalError(f"{self.component_name}: cannot build a vocabulary "
                                 "(empty vocabulary; perhaps the documents only contain stop words)")
        n_terms = len(first_of_term)
        first_of_code = np.full(len(coded.code_of_word) + 1, -1, dtype=np.int64)
        first_of_code[[coded.code_of_word[w] for w in kept]] = [first_of_term[s] for s in stems]
        pairs, counts = count_pairs(coded, first_of_code, n_terms)
        terms = sorted(first_of_term)
        column_of_first = np.empty(n_terms, dtype=np.int64)
        column_of_first[[first_of_term[t] for t in terms]] = np.arange(n_terms)
        index_type = np.int32 if pairs.size <= np.iinfo(np.int32).max else np.int64  # as scikit-learn chooses
        indptr = np.searchsorted(pairs, np.arange(len(texts) + 1, dtype=np.int64) * n_terms).astype(index_type)
        indices = column_of_first[pairs % n_terms].astype(index_type)
        matrix = sp.csr_matrix((counts.astype(np.float32), indices, indptr), shape=(len(texts), n_terms))
        return {term: column for column, term in enumerate(terms)}, matrix

    # -- living trees (docs/updating.md) ---------------------------------------------
    def prunes_nothing(self) -> bool:
        """Whether the vocabulary is exactly the terms that occur: then an update can count only the new
        chunks. With document-frequency cut-offs or a feature cap it depends on the whole corpus (refit)."""
        p = self.params
        return p.min_df == 0 and p.max_df == 1.0 and p.max_features is None

    def current_counts(self) -> sp.csr_matrix | None:
        """The term counts of the current chunks after an update, as one matrix (None: the vectorizer must be
        refit)."""
        return None if self._counts is None else self._counts.whole()

    def count_segments(self) -> CountSegments | None:
        """The same counts as segments (``scoring/count_segments.py``): what a reader that keeps its own state per
        row takes, so that an add costs it the rows added (None: the vectorizer must be refit)."""
        return self._counts

    def _update(self, change: CorpusChange) -> None:
        """Counts of the kept chunks as they are, of the new chunks by analysis. The removed chunks' rows are
        tombstoned (:meth:`_tombstone`: a term whose last chunk left leaves the vocabulary), the new chunks' rows
        appended (:meth:`_append`); when the delta and the tombstones pass the counts' fraction of the base, the live
        rows become a new base (:meth:`_rewrite`: the vocabulary the terms that still occur, in scikit-learn's column
        order, as a fit on the new chunks makes it). docs/scale.md, "Removals by tombstone"."""
        if not self.prunes_nothing():
            self._counts = None
            return
        segments = self._old_counts(change)
        analyze = self._text_analyzer()
        new_terms = [analyze(text) for text in change.added_texts]
        kept = np.zeros(segments.n_rows, dtype=bool)
        kept[change.kept_rows] = True  # ascending (documents/changes.py): the live rows keep their order
        if not kept.all():
            segments = self._tombstone(segments, np.flatnonzero(~kept))
        self._append(segments, new_terms)
        assert self._counts is not None
        if self._counts.tombstones.size and self._counts.past_fraction():
            self._rewrite(self._counts)

    def _tombstone(self, segments: CountSegments, gone: np.ndarray) -> CountSegments:
        """The live rows ``gone`` tombstoned; the terms of the columns that leaves empty leave the vocabulary (a
        rebuild would not hold them: a query's analysis drops them), their columns staying as gaps."""
        segments, emptied = segments.removing(gone)
        if emptied.size:
            terms = self.vocabulary
            vocabulary = dict(self._fitted_vocabulary())
            for column in emptied.tolist():
                del vocabulary[terms[column]]
            self._vocabulary = vocabulary
        return segments

    def _rewrite(self, segments: CountSegments) -> None:
        """The live rows as a new base (a new lineage: the rows close up), over the terms that occur in scikit-learn's
        column order (sorted), each row sorted: what a fit on the resulting chunks gives."""
        import scipy.sparse as sp

        live = segments.whole()
        old_terms = self.vocabulary  # column order, None for a gap
        terms = sorted(t for t, df in zip(old_terms, segments.df.tolist()) if df > 0 and t is not None)
        column = {t: i for i, t in enumerate(terms)}
        moved = np.array([-1 if t is None else column.get(t, -1) for t in old_terms], dtype=live.indices.dtype)
        counts = sp.csr_matrix((live.data, moved[live.indices], live.indptr), shape=(live.shape[0], len(terms)))
        counts.sort_indices()  # (rows appended after the base, or a fit's first-occurrence order, are not sorted)
        self._vocabulary, self._n_columns = column, len(terms)
        self._counts, self._vectorizer, self._analyze = CountSegments.whole_base(counts), None, None

    def _append(self, segments: CountSegments, new_terms: list[list[str]]) -> None:
        """An add: the new chunks' rows appended (``CountSegments.appended``), their new terms given the columns
        after every present one. Neither the old rows nor the old columns move, so the counts and what follows them
        (BM25's postings) cost the rows added (docs/scale.md, "Segments of the keyword index"); the columns are then
        not in sorted order, which changes no score (every reader looks terms up by name)."""
        vocabulary = dict(self._fitted_vocabulary())
        columns = self._n_columns
        for terms in new_terms:
            for term in terms:
                if term not in vocabulary:
                    vocabulary[term], columns = columns, columns + 1
        index_type = np.int64 if columns > np.iinfo(np.int32).max else np.int32
        added = _count_rows(new_terms, vocabulary, columns, np.dtype(np.float32), np.dtype(index_type))
        self._vocabulary, self._n_columns = vocabulary, columns
        self._counts, self._vectorizer, self._analyze = segments.appended(added), None, None

    def _old_counts(self, change: CorpusChange) -> CountSegments:
        """The counts before the change: kept, saved, or (a folder saved before they were) counted again
        from the old chunks, every term of which is in the vocabulary."""
        self._counts = self._counts if self._counts is not None else self._saved_counts()
        if self._counts is None or (self._counts.n_rows, self._counts.n_columns) != (len(change.old), self._n_columns):
            self._counts = CountSegments.whole_base(self.transform(change.old.texts))
        return self._counts

    def _saved_counts(self) -> CountSegments | None:
        """The counts the loaded folder holds: segments, or one matrix (a folder saved before segments), or none."""
        if self._saved_in is None:
            return None
        if CountSegments.saved_in(self._saved_in):
            return CountSegments.load(self._saved_in)
        if (self._saved_in / COUNTS_SHAPE).is_file():
            return CountSegments.whole_base(load_sparse(self._saved_in, COUNTS))
        return None

    def _text_analyzer(self) -> Callable[[str], list[str]]:
        if self._analyze is None:
            steps = self.single_word_steps()
            self._analyze = steps.terms if steps is not None else self._fitted_vectorizer().build_analyzer()
        return self._analyze

    def term_counts(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(vocabulary ids, counts) of one text's terms, ids ascending; unknown terms are dropped."""
        vocabulary = self._fitted_vocabulary()
        counts = Counter(i for i in map(vocabulary.get, self._text_analyzer()(text)) if i is not None)
        ids = sorted(counts)  # a Counter over a query's few terms: several times faster than np.unique
        return np.array(ids, dtype=np.int64), np.array([counts[i] for i in ids], dtype=np.int64)

    def transform(self, texts: list[str]) -> sp.csr_matrix:
        """Counts over the fitted vocabulary: the same matrix as scikit-learn's ``transform``,
        built directly from the analysis and the vocabulary, which is several times faster
        for the short texts queries are. With single-word terms the batch is analyzed in one
        pass (:meth:`_transform_words`)."""
        import scipy.sparse as sp

        vocabulary = self._fitted_vocabulary()
        steps = self.single_word_steps()
        if steps is not None:
            return self._transform_words(texts, steps, vocabulary, self._n_columns)
        rows = [self.term_counts(text) for text in texts]
        shape = (len(texts), self._n_columns)
        if not rows:
            return sp.csr_matrix(shape, dtype=np.float32)
        indptr = np.concatenate([[0], np.cumsum([ids.size for ids, _ in rows])])
        data = np.concatenate([counts for _, counts in rows]).astype(np.float32)
        return sp.csr_matrix((data, np.concatenate([ids for ids, _ in rows]), indptr), shape=shape)

    @staticmethod
    def _transform_words(texts: list[str], steps: WordSteps, vocabulary: dict[str, int],
                         n_terms: int) -> sp.csr_matrix:
        """The batch's count matrix in one pass: tokenize every text into word codes, analyze each distinct word
        once (stop words, one stemming call, vocabulary lookup), map the codes to term ids through an array, and
        count the (text, term) pairs with ``np.unique``, a block of texts at a time (:mod:`token_counts`)."""
        import scipy.sparse as sp

        coded = code_tokens(texts, steps.words)
        kept, stems = steps.terms_of_words(coded.code_of_word)
        term_of_code = np.full(len(coded.code_of_word) + 1, -1, dtype=np.int64)
        term_of_code[[coded.code_of_word[w] for w in kept]] = [vocabulary.get(s, -1) for s in stems]
        pairs, counts = count_pairs(coded, term_of_code, n_terms)
        indptr = np.searchsorted(pairs, np.arange(len(texts) + 1, dtype=np.int64) * n_terms)
        return sp.csr_matrix((counts.astype(np.float32), pairs % n_terms, indptr), shape=(len(texts), n_terms))

    @property
    def vocabulary(self) -> list[str | None]:
        """The terms in column order; None for a column whose term a removal took out (until the counts' next
        rewrite: the column keeps its place, holding counts of tombstoned rows only)."""
        terms: list[str | None] = [None] * self._n_columns
        for term, column in self._fitted_vocabulary().items():
            terms[column] = term
        return terms

    def column_order(self) -> str | None:
        """What numbers the columns, beyond the terms themselves: None for the sorted order a fit (or a removal)
        gives, else a digest of the terms in column order. An add gives its new terms the columns after the
        others (``_append``), so the same documents can be numbered differently after different histories; an
        engine that stores term ids (``BM25Retriever._identity``) must not take a table numbered otherwise for
        its own (docs/scale.md, "Segments of the keyword index")."""
        import hashlib

        terms = self.vocabulary
        if None not in terms and all(a < b for a, b in zip(terms, terms[1:])):  # type: ignore[operator]
            return None
        return hashlib.sha256("\0".join(t or "" for t in terms).encode("utf-8")).hexdigest()

    def _save(self, folder: Path) -> None:
        atomic_write_json(folder / "vocabulary.json", self.vocabulary)
        atomic_write_json(folder / STOP_WORDS_FILE, sorted(self._stop_set()))
        if self._counts is None:
            self._counts = self._saved_counts()  # a loaded tree saved again keeps its counts
        if self._counts is not None:
            self._counts = self._counts.save(folder)

    def _load(self, folder: Path) -> None:
        terms = load_json(folder / "vocabulary.json")
        strings = isinstance(terms, list) and all(t is None or isinstance(t, str) for t in terms)
        vocabulary = {t: i for i, t in enumerate(terms) if t is not None} if strings else {}
        if not strings or len(vocabulary) != len(terms) - terms.count(None):  # (a repeated term: fewer entries)
            raise PersistenceError(f"{folder / 'vocabulary.json'}: not a list of distinct terms (or null for a "
                                   "removed term's column)")
        stop_words = None
        if (folder / STOP_WORDS_FILE).is_file():  # folders saved before it was written use scikit-learn's list
            stop_words = load_json(folder / STOP_WORDS_FILE)
            if not isinstance(stop_words, list) or not all(isinstance(w, str) for w in stop_words):
                raise PersistenceError(f"{folder / STOP_WORDS_FILE}: not a list of words")
            stop_words = frozenset(stop_words)
        self._vocabulary, self._n_columns = vocabulary, len(terms)
        self._stop_words, self._vectorizer, self._steps, self._analyze = stop_words, None, None, None
        self._counts, self._saved_in = None, folder  # the counts are read only when an update needs them
