"""A single-word fit without scikit-learn gives scikit-learn's vocabulary and matrix, array for array.

``BagOfWordsConverter`` counts single-word terms itself when nothing is pruned (every preset), so a
keyword build job does not import scikit-learn (docs/testing.md, fourth pass). A tree built that way must
be the same bytes as one built through ``CountVectorizer``: the reference here is scikit-learn's own fit,
built from the same parameters (``_make``, the vectorizer the other settings still use), over the example
corpus and SciFact.
"""

from __future__ import annotations

import sys

import pytest

from dashrag import build_component
from dashrag.documents.corpus import Corpus
from dashrag.errors import RetrievalError
from tests.conftest import REPO

PARAMS = [
    {"stop_words": "english", "stemmer": "english"},  # the keyword preset's (and hybrid's, boolean's)
    {},  # the agentic preset's: no stop words, no stemmer
    {"lowercase": False, "stemmer": "porter"},
    {"custom_stop_words": ["Retrieval", "the", "dense"], "stop_words": "english", "stemmer": "english"},
    {"strip_accents": "unicode", "stop_words": "english"},  # scikit-learn's preprocessor, our counting
]


def _converter(params):
    return build_component({"component": "BagOfWordsConverter", "params": params})


def _assert_fit_is_scikit_learns(params, texts):
    ours = _converter(params)
    matrix = ours.fit_transform(texts)
    reference = ours._make()
    expected = reference.fit_transform(texts)
    assert ours._vectorizer is None  # counted without scikit-learn's vectorizer
    assert ours.vocabulary == sorted(reference.vocabulary_, key=reference.vocabulary_.get)
    assert type(matrix) is type(expected) and matrix.shape == expected.shape
    for name in ("data", "indices", "indptr"):
        ours_array, expected_array = getattr(matrix, name), getattr(expected, name)
        assert ours_array.dtype == expected_array.dtype, name
        assert ours_array.tobytes() == expected_array.tobytes(), name
    assert matrix.has_sorted_indices == expected.has_sorted_indices


def _example_texts() -> list[str]:
    documents = Corpus.from_path(REPO / "examples" / "corpus").documents
    paragraphs = [p for d in documents for p in d.text.split("\n\n") if p.strip()]
    return [d.text for d in documents] + paragraphs + ["", "the and of", "Ünïcödé ÉTÉ été 42 x"]


@pytest.mark.parametrize("params", PARAMS)
def test_the_fit_over_the_example_corpus_is_scikit_learns(params):
    _assert_fit_is_scikit_learns(params, _example_texts())


@pytest.mark.slow
@pytest.mark.parametrize("params", PARAMS[:2])
def test_the_fit_over_scifact_is_scikit_learns(params, scifact_dir):
    _assert_fit_is_scikit_learns(params, [d.text for d in Corpus.from_path(scifact_dir).documents])


@pytest.mark.parametrize("params", PARAMS[:2])  # with stemming (words of one term in several batches) and without
def test_a_fit_counted_a_few_texts_at_a_time_is_scikit_learns(params, monkeypatch):
    """The fit counts its (text, term) pairs a block of texts at a time (its memory is one block's temporaries,
    docs/scale.md): blocks of about three tokens, a term's first occurrence in a later block than its words'
    (stemming), texts of stop words only (a block may hold no term at all) give the same arrays as one pass."""
    from dashrag.vectorizers import token_counts

    monkeypatch.setattr(token_counts, "TOKENS_PER_BLOCK", 3)
    texts = ["the and of", "", "of the"] + _example_texts() + ["running", "runs", "the ran"]
    _assert_fit_is_scikit_learns(params, texts)


def test_only_stop_words_is_refused_as_scikit_learn_refuses_it():
    ours = _converter({"stop_words": "english"})
    with pytest.raises(ValueError, match="empty vocabulary; perhaps the documents only contain stop words"):
        ours._make().fit_transform(["the and of", ""])
    with pytest.raises(RetrievalError, match="cannot build a vocabulary .empty vocabulary; perhaps the documents"):
        ours.fit_transform(["the and of", ""])


def test_settings_that_prune_or_form_n_grams_still_fit_with_scikit_learn():
    for params in ({"min_df": 2}, {"max_df": 0.5}, {"max_features": 5}, {"ngram_max": 2}, {"analyzer": "char"}):
        converter = _converter(params)
        converter.fit_transform(_example_texts())
        assert converter._vectorizer is not None, params


def test_the_stop_word_copy_is_scikit_learns():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from dashrag.vectorizers.english_stop_words import ENGLISH_STOP_WORDS as COPY

    assert COPY == ENGLISH_STOP_WORDS


def test_a_keyword_fit_and_query_import_no_scikit_learn():
    """In a fresh process: a fit is a build job's whole use of the vectorizer."""
    import subprocess

    code = ("import sys; from dashrag import build_component; "
            "v = build_component({'component': 'BagOfWordsConverter', "
            "'params': {'stop_words': 'english', 'stemmer': 'english'}}); "
            "v.fit_transform(['Running runners ran', 'the dense retrieval']); v.transform(['runner']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"
