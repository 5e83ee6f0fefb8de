"""What one training step and one encoded text cost on this machine, now: measured on real data.

The time budget is only as good as its rates, and a machine shared with other work runs at a
speed no table knows. So before planning, the pipeline runs a few real steps (the loss's forward
and backward on real batches of the training triples, at the batch size and sequence length that
will train) and encodes real documents and queries. The gradients are thrown away, the weights
are untouched (no optimiser step) and the seed is set again afterwards, so the training that
follows is the one a run without the probe would do.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Sequence

PROBE_STEPS = 2  # the first warms up (allocations, kernels); the second is timed
PROBE_TEXTS = 32


@dataclass(frozen=True)
class Rates:
    """Seconds per optimiser step (forward + backward of a batch) and per encoded document and query."""

    step_s: float
    document_s: float
    query_s: float


def evenly(items: Sequence[Any], count: int) -> list[Any]:
    """``count`` items spread over ``items`` (every k-th), so lengths are representative of the whole."""
    if len(items) <= count:
        return list(items)
    stride = len(items) / count
    return [items[int(i * stride)] for i in range(count)]


def time_steps(model: Any, loss: Any, columns: dict[str, list[str]], batch_size: int, steps: int) -> float:
    """The median seconds of a forward + backward of ``loss`` on consecutive real batches (after one warm-up)."""
    import torch

    rows = len(columns["anchor"])
    model.train()
    seconds: list[float] = []
    for step in range(steps):
        picked = [(step * batch_size + i) % rows for i in range(batch_size)]
        began = time.perf_counter()
        features = [model.tokenize([columns[name][i] for i in picked]) for name in ("anchor", "positive", "negative")]
        loss(features, torch.empty(0)).backward()
        model.zero_grad(set_to_none=True)
        seconds.append(time.perf_counter() - began)
    model.eval()
    timed = seconds[1:] or seconds
    return statistics.median(timed)


def time_encoding(model: Any, texts: Sequence[str]) -> float:
    began = time.perf_counter()
    model.encode(list(texts), batch_size=PROBE_TEXTS, normalize_embeddings=True, convert_to_numpy=True,
                 show_progress_bar=False)
    return (time.perf_counter() - began) / max(len(texts), 1)


def measure_rates(model: Any, loss: Any, columns: dict[str, list[str]], batch_size: int,
                  documents: Sequence[str], queries: Sequence[str], *, steps: int = PROBE_STEPS,
                  seed: int = 42) -> Rates:
    """Step and encoding rates of ``model`` on samples of the real texts; the RNG is reseeded afterwards."""
    from transformers import set_seed

    step_s = time_steps(model, loss, columns, batch_size, steps)
    rates = Rates(step_s=step_s, document_s=time_encoding(model, evenly(documents, PROBE_TEXTS)),
                  query_s=time_encoding(model, evenly(queries, PROBE_TEXTS)))
    set_seed(seed)
    return rates


__all__ = ["PROBE_STEPS", "Rates", "measure_rates"]
