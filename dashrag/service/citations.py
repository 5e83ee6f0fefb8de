"""Step 10b: the citations and the low-confidence flag of an assembled context."""

from __future__ import annotations

from typing import Iterable, Sequence


def citations(source_ids: Iterable[str | None]) -> list[str]:
    """The sorted set of the kept chunks' non-null source ids."""
    return sorted({s for s in source_ids if s is not None})


def low_confidence(kept: Sequence[object]) -> bool:
    """True exactly when no chunk was kept."""
    return len(kept) == 0
