"""Step 10a: pack chunks greedily into a character budget (token budget x 4).

The chunks arrive best first. Chunks with empty text are skipped. Packing *stops*
(it does not skip ahead) before the first chunk that would take the total over the
budget, once at least one chunk is kept, so the top non-empty chunk is always kept,
even when it alone is over budget. The kept chunks keep their order.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

CHARS_PER_TOKEN = 4


def char_budget(tokens: int) -> int:
    return tokens * CHARS_PER_TOKEN


def pack(items: Sequence[T], budget_chars: int, text: Callable[[T], str]) -> list[T]:
    kept: list[T] = []
    used = 0
    for item in items:
        length = len(text(item))
        if length == 0:
            continue
        if kept and used + length > budget_chars:
            break
        kept.append(item)
        used += length
    return kept
