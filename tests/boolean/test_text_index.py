"""The text clause's index: exact phrase matches (checked against PhraseMatcher), BM25 scores, persistence."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.boolean.normalise_text import PhraseMatcher, normalise_words
from dashrag.boolean.text_index import TextIndex, chunk_keys
from dashrag.errors import PersistenceError

TEXTS = [
    "The mop is wet. Wring the mop!",
    "Mops and buckets; a flat Microfibre mop.",
    "Don’t leave the wet mop in the hallway.",
    "Kitchen floor, kitchen table.",
]


def matching_rows(texts, phrase, case_sensitive):
    matcher = PhraseMatcher(phrase, case_sensitive)
    return [row for row, text in enumerate(texts) if matcher.matches(text)]


@pytest.fixture(scope="module")
def index() -> TextIndex:
    return TextIndex.build(TEXTS)


def test_a_word_matches_whole_words_only(index):
    rows, _ = index.search("mop", False, TEXTS)
    assert sorted(rows.tolist()) == [0, 1, 2]  # "Mops" in text 1 is not "mop", but its "flat Microfibre mop" is


def test_a_phrase_needs_its_words_in_order_and_adjacent(index):
    assert index.search("wet mop", False, TEXTS)[0].tolist() == [2]


def test_case_sensitive_phrases_keep_case(index):
    assert (
        index.search("Microfibre", True, TEXTS)[0].tolist(),
        index.search("MICROFIBRE", True, TEXTS)[0].tolist(),
    ) == ([1], [])


def test_apostrophe_styles_match(index):
    assert index.search("don't leave", False, TEXTS)[0].tolist() == [2]


def test_allowed_rows_restrict_the_matches(index):
    allowed = np.array([False, True, True, True])
    assert sorted(index.search("mop", False, TEXTS, allowed)[0].tolist()) == [1, 2]


def test_results_are_best_first_with_ties_to_the_lower_row(index):
    rows, scores = index.search("mop", False, TEXTS)
    assert [(r, s) for r, s in zip(rows.tolist(), scores.tolist())] == sorted(
        zip(rows.tolist(), scores.tolist()), key=lambda p: (-p[1], p[0])
    )


def test_scores_are_lucene_bm25_of_the_phrase_words():
    texts = ["a b b", "a c", "c c c c"]
    index = TextIndex.build(texts, k1=1.2, b=0.75)
    lengths = [3, 2, 4]
    avgdl = sum(lengths) / 3

    def term(tf, df, dl):
        idf = math.log(1 + (3 - df + 0.5) / (df + 0.5))
        return idf * tf / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))

    # "a b": text 0 holds a (df 2) once and b (df 1) twice
    assert index.bm25("a b")[0] == pytest.approx(term(1, 2, 3) + term(2, 1, 3))


def test_case_folding_extra_keys_cover_dotted_capital_i():
    # "İ" case-folds to "i" + a combining dot, which is no letter: the folded words differ
    words, extra = chunk_keys("İstanbul")
    assert (words, extra) == (("i", "stanbul"), frozenset({"i̇stanbul"}))


def test_save_and_load_keep_the_answers(index, tmp_path):
    index.save(tmp_path)
    loaded = TextIndex.load(tmp_path, len(TEXTS))
    assert [loaded.search(p, cs, TEXTS)[0].tolist() for p, cs in (("mop", False), ("Microfibre", True))] == [
        index.search(p, cs, TEXTS)[0].tolist() for p, cs in (("mop", False), ("Microfibre", True))
    ]


def test_loading_for_another_corpus_size_is_refused(index, tmp_path):
    index.save(tmp_path)
    with pytest.raises(PersistenceError, match="covers 4 chunks, the corpus has 5"):
        TextIndex.load(tmp_path, 5)


# -- property: the index finds exactly what PhraseMatcher accepts ----------------------------

WORDS = [
    "mop",
    "Mop",
    "MOP",
    "mops",
    "floor",
    "don't",
    "don’t",
    "İstanbul",
    "istanbul",
    "STRASSE",
    "straße",
    "ﬁne",
    "fine",
    "a",
    "x_y",
    "ͅ",
    "ß",
]
SEPARATORS = [" ", "  ", ", ", ". ", "-", "\n", "'", "’"]
texts = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), min_size=1, max_size=8).map(
    lambda parts: "".join(w + s for w, s in parts)
)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=1, max_size=6), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3), st.booleans())
def test_search_returns_exactly_the_rows_phrase_matcher_accepts(corpus, phrase_words, case_sensitive):
    phrase = " ".join(phrase_words)
    if not normalise_words(phrase, case_sensitive):
        return
    index = TextIndex.build(corpus)
    assert sorted(index.search(phrase, case_sensitive, corpus)[0].tolist()) == matching_rows(
        corpus, phrase, case_sensitive
    )
