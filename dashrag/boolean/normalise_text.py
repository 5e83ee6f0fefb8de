"""Normalised text for the text clause: one spelling of apostrophes, quotes, punctuation and spaces.

A user typing ``'don't mop'`` should find "Don’t  mop!" in a document, so both the
clause and the fragment go through the same normalisation before the containment
test:

1. Unicode NFKC (full-width letters, ligatures such as "ﬁ" become plain letters);
2. every apostrophe-like mark (’ ‘ ʼ ′ ` ´) becomes ``'`` and every double-quote-like
   mark (“ ” „ « » ″) becomes ``"``;
3. every character that is not a letter or a digit (punctuation, symbols, the marks
   above, whitespace of any kind) becomes a word break, and runs of breaks collapse;
4. unless the match is case-sensitive, text is case-folded (``str.casefold``).

The containment is by whole words: ``'mop'`` matches "the mop" and "MOP," but not
"mops" or "mopping", as a phrase search would. "don't" is the two words "don t" on
both sides, so it matches "don’t" and "don't" but not "dont".
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

_APOSTROPHES = "\u2019\u2018\u02bc\u2032`\u00b4"
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u00ab\u00bb\u2033"
_FOLD = str.maketrans({**{c: "'" for c in _APOSTROPHES}, **{c: '"' for c in _DOUBLE_QUOTES}})


def normalise_words(text: str, case_sensitive: bool = False) -> tuple[str, ...]:
    """The words of ``text`` after the normalisation above."""
    text = unicodedata.normalize("NFKC", text).translate(_FOLD)
    if not case_sensitive:
        text = text.casefold()
    broken = "".join(ch if ch.isalnum() else " " for ch in text)
    return tuple(broken.split())


def normalise_text(text: str, case_sensitive: bool = False) -> str:
    """The normalised words joined by single spaces (the form the containment test compares)."""
    return " ".join(normalise_words(text, case_sensitive))


@dataclass(frozen=True)
class PhraseMatcher:
    """Tests whether texts contain a phrase as a run of whole words, after normalisation.

    Built once per clause and applied to many fragments, so the phrase is normalised once.
    A phrase with no words at all (only punctuation) is rejected by the parser; here it
    matches nothing rather than everything.
    """

    phrase: str
    case_sensitive: bool = False
    _needle: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        words = normalise_words(self.phrase, self.case_sensitive)
        object.__setattr__(self, "_needle", f" {' '.join(words)} " if words else "")

    def matches(self, text: str) -> bool:
        if not self._needle:
            return False
        return self._needle in f" {normalise_text(text, self.case_sensitive)} "

    def count(self, text: str) -> int:
        """How many (possibly overlapping) times the phrase occurs; a tie-breaker for scorers."""
        if not self._needle:
            return 0
        haystack = f" {normalise_text(text, self.case_sensitive)} "
        found, start = 0, haystack.find(self._needle)
        while start != -1:
            found += 1
            start = haystack.find(self._needle, start + 1)
        return found


def contains_phrase(text: str, phrase: str, case_sensitive: bool = False) -> bool:
    """One-off containment test; build a ``PhraseMatcher`` to test many texts."""
    return PhraseMatcher(phrase, case_sensitive).matches(text)
