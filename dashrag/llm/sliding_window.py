"""Selecting from more candidates than fit one prompt: a sliding window, as listwise rerankers do.

When the k1 candidates do not fit the model's context budget, the list is judged in
windows of ``window`` candidates, moving ``stride`` candidates at a time. As in
RankGPT, the windows go **from the end of the list to its start**: the model's
choices in a window are moved to the front of that window, the next window (``stride``
earlier) overlaps those front places, so a strong candidate found late keeps being
carried towards the top, and the last window, at the head of the list, decides the
final selection. The child's order is thus used as a prior: the candidates it ranked
first are judged last, against the best of everything behind them.

Two departures from RankGPT's loop, both so that nothing is silently skipped:

* the last window always starts at position 0 (RankGPT stops once a full step no
  longer fits, leaving the head of the list unseen when ``n - window`` is not a
  multiple of the stride);
* ``top_k + stride <= window`` is required, so the up-to-``top_k`` candidates chosen
  in one window always lie inside the next one and are judged again.

With an oracle that always picks the true best ``top_k`` of a window, the final
selection is exactly the true best ``top_k`` of the whole list (tested).

The selector is any function from the candidate indices of a window (in their
current order) to the chosen ones, best first; the reranker makes it one validated
``select_best_chunks`` round trip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from dashrag.errors import ConfigError, SelectionError

WindowSelector = Callable[[Sequence[int]], Sequence[int]]


@dataclass(frozen=True)
class SlidingSelection:
    """``selected``: the final window's choice, best first; ``order``: the whole reordered list."""

    selected: tuple[int, ...]
    order: tuple[int, ...]
    windows: tuple[tuple[int, ...], ...]  # the candidate indices each selector call saw, in call order


def window_starts(n_candidates: int, window: int, stride: int) -> list[int]:
    """Start positions of the windows, from the end of the list back to 0."""
    if window < 1 or stride < 1:
        raise ConfigError(f"sliding window needs window >= 1 and stride >= 1, got {window} and {stride}")
    if n_candidates <= window:
        return [0]
    starts = list(range(n_candidates - window, 0, -stride))
    return starts + [0]


def check_window(window: int, stride: int, top_k: int) -> None:
    """Refuse a window that could drop a chosen candidate between two windows."""
    if top_k + stride > window:
        raise ConfigError(
            f"sliding window of {window} with stride {stride} cannot carry top_k={top_k} "
            f"chosen candidates forward: needs top_k + stride <= window"
        )


def sliding_window_select(
    n_candidates: int, window: int, stride: int, top_k: int, select: WindowSelector
) -> SlidingSelection:
    """Run ``select`` over windows from the back of ``range(n_candidates)`` to its front."""
    check_window(window, stride, top_k)
    if n_candidates == 0:
        return SlidingSelection(selected=(), order=(), windows=())
    order = list(range(n_candidates))
    seen: list[tuple[int, ...]] = []
    chosen: list[int] = []
    for start in window_starts(n_candidates, window, stride):
        current = tuple(order[start : start + window])
        seen.append(current)
        chosen = _checked(select(current), current, top_k)
        rest = [i for i in current if i not in chosen]
        order[start : start + len(current)] = chosen + rest
    return SlidingSelection(selected=tuple(chosen), order=tuple(order), windows=tuple(seen))


def _checked(chosen: Sequence[int], offered: tuple[int, ...], top_k: int) -> list[int]:
    chosen = list(chosen)
    if not chosen or len(chosen) > top_k or len(set(chosen)) != len(chosen) or not set(chosen) <= set(offered):
        raise SelectionError(
            f"a window selector must return 1..{top_k} distinct candidates of its window, got {chosen}"
        )
    return chosen
