"""Steps 6, 7 and 9: merge-and-sort, the retrieval floor, the confidence filter.

A chunk whose score is missing (``None``) counts as 0.0 for the floor and for sorting,
as in the reference: a collection that cannot score a chunk never lets it through a
positive floor. Sorts are stable, so equal scores keep their collections' order.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence, TypeVar

T = TypeVar("T")


def score_or_zero(score: float | None) -> float:
    return 0.0 if score is None else float(score)


def sort_by(items: Iterable[T], score: Callable[[T], float | None]) -> list[T]:
    """Best first by ``score`` (missing = 0.0); stable for ties."""
    return sorted(items, key=lambda item: -score_or_zero(score(item)))


def at_least(items: Sequence[T], score: Callable[[T], float | None], threshold: float) -> list[T]:
    """The items whose score (missing = 0.0) is >= ``threshold``, in their order: drops those below."""
    return [item for item in items if score_or_zero(score(item)) >= threshold]
