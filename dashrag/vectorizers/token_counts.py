"""Counting the words of many texts in memory that grows with the distinct words, not with every token.

A single-word fit or transform (:class:`~dashrag.vectorizers.bag_of_words.BagOfWordsConverter`) analyses each
distinct word once and counts (text, term) pairs with numpy. Holding every text's token list at once (a Python
string per token) cost a million-document corpus over 18 GB before the counting started (docs/scale.md): here a
token is one 8-byte code in an array as soon as its text is tokenized, and the pairs are counted a block of texts
at a time, so the temporaries are one block's. The result is the same matrix entry for entry: a row's entries are
ordered by their column, and every pair of one block comes before every pair of the next.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

TOKENS_PER_BLOCK = 4_000_000
"""About how many tokens one counting step holds (each costs some 40 bytes of temporaries)."""


class CodedTokens(NamedTuple):
    """Every token of a batch of texts as the code of its word, text after text."""

    code_of_word: dict[str, int]
    """Each distinct word and its code, in the order the words first occur."""
    codes: np.ndarray
    """Each token's word code (int64), the texts' tokens one after the other."""
    lengths: np.ndarray
    """How many tokens each text has (int64)."""


def code_tokens(texts: Iterable[str], words_of: Callable[[str], list[str]]) -> CodedTokens:
    """Tokenize each text (``words_of``) and keep only its words' codes; a word's code is the number of distinct
    words seen before its first occurrence."""
    code_of_word: dict[str, int] = {}
    codes = array("q")
    lengths = array("q")
    for text in texts:
        words = words_of(text)
        lengths.append(len(words))
        codes.extend([code_of_word.setdefault(word, len(code_of_word)) for word in words])
    return CodedTokens(code_of_word, np.frombuffer(codes, dtype=np.int64), np.frombuffer(lengths, dtype=np.int64))


def count_pairs(coded: CodedTokens, column_of_code: np.ndarray, n_columns: int,
                tokens_per_block: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each text's distinct columns and their counts: ``(pairs, counts)`` where a pair is
    ``text * n_columns + column``, ascending (so by text, then by column); a token whose code maps to a negative
    column (a stop word, a term outside the vocabulary) is not counted. A block holds about ``tokens_per_block``
    tokens (default :data:`TOKENS_PER_BLOCK`), at least one text."""
    block = TOKENS_PER_BLOCK if tokens_per_block is None else tokens_per_block
    lengths = coded.lengths
    ends = np.cumsum(lengths)
    pairs_of_blocks: list[np.ndarray] = [np.empty(0, dtype=np.int64)]
    counts_of_blocks: list[np.ndarray] = [np.empty(0, dtype=np.int64)]
    first = 0
    while first < len(lengths):
        start = int(ends[first] - lengths[first])
        last = max(int(np.searchsorted(ends, start + block, side="right")), first + 1)
        columns = column_of_code[coded.codes[start:int(ends[last - 1])]]
        text_of_token = np.repeat(np.arange(first, last, dtype=np.int64), lengths[first:last])
        known = columns >= 0
        pairs, counts = np.unique(text_of_token[known] * n_columns + columns[known], return_counts=True)
        pairs_of_blocks.append(pairs)
        counts_of_blocks.append(counts)
        first = last
    return np.concatenate(pairs_of_blocks), np.concatenate(counts_of_blocks)
