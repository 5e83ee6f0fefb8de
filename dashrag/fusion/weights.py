"""Per-child fusion weights: the one place they are checked.

Every fusion mode honours the same weights (docs/design.md, "Scores and fusion"), so
they are validated once, here, with the same message whichever mode asked. A
weight of 0 is allowed and means "this child contributes nothing": its chunks
reach the fused list only through other children. A tree whose weights are *all*
zero would return nothing for every query, which is never what a user meant, so it
is refused instead of silently answering with an empty list.
"""

from __future__ import annotations

import math
from typing import Sequence

from dashrag.errors import ConfigError, ConfigIssue


def resolve_weights(weights: Sequence[float] | None, n_children: int) -> tuple[float, ...]:
    """Return one finite, non-negative weight per child (default: all 1.0).

    Raises :class:`ConfigError` (path ``weights``) for a list whose length is not
    the number of children, a negative or non-finite weight, or all weights zero.
    """
    if weights is None:
        return (1.0,) * n_children
    values = tuple(weights)
    if len(values) != n_children:
        raise _weights_error(f"expected {n_children} weights (one per child), got {len(values)}")
    resolved: list[float] = []
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _weights_error(f"weight {index} must be a number, got {value!r}", index)
        number = float(value)
        if not math.isfinite(number):
            raise _weights_error(f"weight {index} must be finite, got {value!r}", index)
        if number < 0:
            raise _weights_error(f"weight {index} must be >= 0, got {value!r}", index)
        resolved.append(number)
    if n_children and not any(resolved):
        raise _weights_error("at least one weight must be > 0 (all zero would fuse nothing)")
    return tuple(resolved)


def _weights_error(message: str, index: int | None = None) -> ConfigError:
    path = "weights" if index is None else f"weights[{index}]"
    return ConfigError([ConfigIssue(path, message)])
