"""Counting a batch's (text, term) pairs a block of texts at a time gives every text's counts.

``token_counts`` keeps a token as an 8-byte word code and counts the pairs one block of texts at a time, so a
million-document fit holds one block's temporaries (docs/scale.md). The property: whatever the block size, the
pairs and counts are each text's own ``Counter`` of its columns, in text then column order. The converter-level
equality with scikit-learn (example corpus, SciFact) is ``test_fit_without_scikit_learn.py``'s, which runs
through the same functions with the default block size.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dashrag.vectorizers.token_counts import code_tokens, count_pairs

WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "the", "a"])
TEXTS = st.lists(st.lists(WORDS, max_size=7).map(" ".join), max_size=12)


def _expected(texts: list[str], column_of_word: dict[str, int], n_columns: int) -> tuple[list[int], list[int]]:
    pairs, counts = [], []
    for number, text in enumerate(texts):
        counted = Counter(column_of_word[w] for w in text.split() if column_of_word[w] >= 0)
        for column in sorted(counted):
            pairs.append(number * n_columns + column)
            counts.append(counted[column])
    return pairs, counts


@given(texts=TEXTS, block=st.integers(min_value=1, max_value=20))
def test_the_pairs_counted_block_by_block_are_each_texts_own_counts(texts, block):
    coded = code_tokens(texts, str.split)
    columns = sorted(set(coded.code_of_word) - {"the", "a"})
    column_of_word = {w: columns.index(w) if w in columns else -1 for w in coded.code_of_word}
    column_of_code = np.full(len(coded.code_of_word) + 1, -1, dtype=np.int64)
    for word, code in coded.code_of_word.items():
        column_of_code[code] = column_of_word[word]
    pairs, counts = count_pairs(coded, column_of_code, n_columns=4, tokens_per_block=block)
    assert (pairs.tolist(), counts.tolist()) == _expected(texts, column_of_word, 4)


def test_a_words_code_is_the_number_of_distinct_words_before_its_first_occurrence():
    coded = code_tokens(["b a b", "", "c a"], str.split)
    assert coded.code_of_word == {"b": 0, "a": 1, "c": 2}
    assert coded.codes.tolist() == [0, 1, 0, 2, 1]
    assert coded.lengths.tolist() == [3, 0, 2]
