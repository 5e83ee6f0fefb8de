"""Step 4's classes at their boundaries (word counts, markers, question marks)."""

from __future__ import annotations

import pytest

from dashrag.service.complexity import classify, token_budget

BUDGETS = {"simple": 512, "medium": 1024, "complex": 2048}


def words(n: int, end: str = "") -> str:
    return " ".join(f"w{i}" for i in range(n)) + end


def test_ten_plain_words_are_simple():
    assert classify(words(10)) == "simple"


def test_eleven_plain_words_without_a_marker_are_complex():
    assert classify(words(11)) == "complex"


def test_one_question_mark_stays_simple_and_two_do_not():
    assert classify(words(5, "?")) == "simple"
    assert classify("w1 w2? w3 w4?") == "medium"


@pytest.mark.parametrize("query", ["compare bm25", "bm25 versus dense", "bm25 vs dense", "the difference of two"])
def test_a_short_query_with_a_compare_marker_is_medium(query):
    assert classify(query) == "medium"


@pytest.mark.parametrize("query", ["both bm25 and tf-idf", "bm25 as well as dense", "stemming; stop words"])
def test_a_short_query_with_a_multi_marker_is_medium(query):
    assert classify(query) == "medium"


def test_twenty_eight_words_with_a_question_mark_are_medium_and_twenty_nine_complex():
    assert classify(words(28, "?")) == "medium"
    assert classify(words(29, "?")) == "complex"


def test_a_leading_question_word_is_a_question_marker():
    assert classify("how " + words(12)) == "medium"
    assert classify("somehow " + words(12)) == "complex"


def test_markers_match_whole_words_only():
    assert classify("vsphere bothersome comparer") == "simple"


def test_the_budget_of_each_class():
    assert [token_budget(c, BUDGETS) for c in ("simple", "medium", "complex")] == [512, 1024, 2048]
