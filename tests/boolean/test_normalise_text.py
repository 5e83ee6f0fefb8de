"""Text-clause normalisation and whole-word phrase containment."""

from __future__ import annotations

import pytest

from dashrag.boolean import PhraseMatcher, contains_phrase, normalise_text


def test_apostrophe_variants_fold_together():
    assert normalise_text("Don’t") == normalise_text("don't") == normalise_text("DONʼT") == "don t"


def test_quotes_punctuation_and_spaces_become_single_breaks():
    assert normalise_text("  “Wet”   floor!!\t—  careful…") == "wet floor careful"


def test_case_sensitive_keeps_case():
    assert normalise_text("Microfibre MOP", case_sensitive=True) == "Microfibre MOP"


def test_nfkc_folds_compatibility_characters():
    assert normalise_text("ﬁne ＭＯＰ") == "fine mop"


@pytest.mark.parametrize(
    ("text", "phrase", "expected"),
    [
        ("Don’t leave the wet mop in the hallway", "don't leave", True),
        ("the MOP, and bucket", "mop and bucket", True),
        ("string mops hold water", "mop", False),
        ("chomp", "mop", False),
        ("kitchen-floor tiles", "kitchen floor", True),
        ("floor kitchen", "kitchen floor", False),
    ],
)
def test_case_insensitive_containment_is_by_whole_words(text, phrase, expected):
    assert contains_phrase(text, phrase) is expected


def test_case_sensitive_containment():
    text = "a flat Microfibre mop"
    assert contains_phrase(text, "Microfibre", True) and not contains_phrase(text, "microfibre", True)


def test_phrase_without_words_matches_nothing():
    assert not PhraseMatcher("...").matches("... anything ...")


def test_count_counts_overlapping_occurrences():
    assert PhraseMatcher("a a").count("A a, a! b a a") == 3
