"""Step 4: the complexity class of a query, and the token budget it earns.

Rules (the reference's, on the *original* query, never the rewrite):

* ``simple``: at most 10 words, no compare or multi marker, at most one ``?``;
* ``medium``: at most 28 words and at least one compare, multi or question marker;
* ``complex``: everything else (longer queries, and 11..28 words without any marker).

Words are whitespace-separated tokens. A *question marker* is a ``?`` or a leading
interrogative word; a *compare marker* a word such as ``versus`` or ``difference``; a
*multi marker* asks for several things at once (``both``, ``as well as``, a ``;`` or a
second ``?``). Markers match whole words, case-insensitively; the lists are below.
"""

from __future__ import annotations

import re
from typing import Literal

Complexity = Literal["simple", "medium", "complex"]

SIMPLE_MAX_WORDS = 10
MEDIUM_MAX_WORDS = 28
COMPARE_MARKERS = ("compare", "compared", "comparing", "comparison", "versus", "vs", "difference", "differences",
                   "differ", "differs", "contrast", "better than", "worse than", "pros and cons", "similarities")
MULTI_MARKERS = ("both", "as well as", "and also", "respectively", "each of", "multiple", "several", "list all",
                 "steps")
QUESTION_WORDS = ("what", "why", "how", "when", "where", "which", "who", "whom", "whose", "is", "are", "does", "do",
                  "can", "should", "could", "would", "will")


def _phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in sorted(phrases, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


_COMPARE = _phrase_pattern(COMPARE_MARKERS)
_MULTI = _phrase_pattern(MULTI_MARKERS)
_LEADING_QUESTION_WORD = re.compile(rf"^\W*(?:{'|'.join(QUESTION_WORDS)})(?!\w)", re.IGNORECASE)


def word_count(query: str) -> int:
    return len(query.split())


def has_compare_marker(query: str) -> bool:
    return _COMPARE.search(query) is not None


def has_multi_marker(query: str) -> bool:
    return _MULTI.search(query) is not None or ";" in query or query.count("?") > 1


def has_question_marker(query: str) -> bool:
    return "?" in query or _LEADING_QUESTION_WORD.search(query) is not None


def classify(query: str) -> Complexity:
    words, compare, multi = word_count(query), has_compare_marker(query), has_multi_marker(query)
    if words <= SIMPLE_MAX_WORDS and not compare and not multi and query.count("?") <= 1:
        return "simple"
    if words <= MEDIUM_MAX_WORDS and (compare or multi or has_question_marker(query)):
        return "medium"
    return "complex"


def token_budget(complexity: Complexity, budgets: dict[str, int]) -> int:
    """The budget in tokens for a class, from ``{"simple": 512, "medium": 1024, "complex": 2048}``."""
    return budgets[complexity]
