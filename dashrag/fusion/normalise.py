"""Score normalisation for the score-based fusion modes.

Fusion never adds raw scores of different scales (a BM25 score of 14 and a cosine
of 0.8 say nothing about each other), so each child's scores are first mapped onto
[0, 1] *within that child's own list*, and only then combined.

Two maps, both as in LlamaIndex's fusion retriever:

* :func:`min_max_normalise` -- ``(s - min) / (max - min)``: the child's best
  becomes 1, its worst 0 (relative score fusion).
* :func:`distribution_normalise` -- the same with ``min = mean - 3 sigma`` and
  ``max = mean + 3 sigma`` (population sigma), clipped to [0, 1]: a child whose
  scores are tightly bunched does not get its small differences blown up to the
  whole [0, 1] range (distribution-based score fusion).

One deliberate difference from LlamaIndex: a list whose scores are all equal (a
single result, say) maps to 1.0 whatever the sign of the score. Its chunks are
that child's best, and a child whose only hit has a negative raw score (a negated
distance) should not be told it found nothing.

Both maps are scale-free, so the scores are first divided by a power of two that
brings them into [-1, 1]. That division is exact, and it keeps ``max - min`` and
the variance from overflowing for scores near the float limits.
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence


def min_max_normalise(scores: Sequence[float]) -> list[float]:
    """Map scores linearly so the largest becomes 1.0 and the smallest 0.0.

    All-equal (or a single) score -> 1.0 each; empty -> empty.
    """
    scaled = _scale_into_unit_range(scores)
    if not scaled:
        return []
    low, high = min(scaled), max(scaled)
    if high == low:
        return [1.0] * len(scaled)
    return [(s - low) / (high - low) for s in scaled]


def distribution_normalise(scores: Sequence[float]) -> list[float]:
    """Map ``mean - 3 sigma`` to 0.0 and ``mean + 3 sigma`` to 1.0, clipping outside.

    Sigma is the population standard deviation of the list. All-equal (or a
    single) score -> 1.0 each; empty -> empty.
    """
    scaled = _scale_into_unit_range(scores)
    if not scaled:
        return []
    mean = math.fsum(scaled) / len(scaled)
    sigma = statistics.pstdev(scaled, mean)
    if sigma == 0:
        return [1.0] * len(scaled)
    low, high = mean - 3 * sigma, mean + 3 * sigma
    return [_clip_unit((s - low) / (high - low)) for s in scaled]


def _scale_into_unit_range(scores: Sequence[float]) -> list[float]:
    """Divide every score by the same power of two so the largest magnitude is <= 1.

    Scaling by a power of two only shifts exponents, so it is exact (bar values
    some 300 orders of magnitude below the largest, which become subnormal) and
    both normalisations, being scale-free, are unchanged by it.
    """
    values = [float(s) for s in scores]
    largest = max((abs(v) for v in values), default=0.0)
    if largest == 0.0:
        return values
    _, exponent = math.frexp(largest)
    return [math.ldexp(v, -exponent) for v in values]


def _clip_unit(value: float) -> float:
    return min(1.0, max(0.0, value))
