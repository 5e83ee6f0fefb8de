"""What one training step and one encoded text cost on this machine, now: measured on real data.

The time budget is only as good as its rates, and a machine shared with other work runs at a
speed no table knows. So before planning, the pipeline runs a real step (after a small warm-up) (the loss's forward
and backward on real batches of the training triples, at the batch size and sequence length that
will train) and encodes real documents and queries. The gradients are thrown away, the weights
are untouched (no optimiser step) and the seed is set again afterwards, so the training that
follows is the one a run without the probe would do.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Sequence

PROBE_STEPS = 1  # timed full batches, after a warm-up on a quarter batch
PROBE_TEXTS = 32


@dataclass(frozen=True)
class Rates:
    """Seconds per optimiser step (forward + backward of a batch) and per encoded document and query, at the
    training length; ``reading_document_s``: per document at the length the written model reads (its corpus
    embedding), the same figure when both lengths are one."""

    step_s: float
    document_s: float
    query_s: float
    reading_document_s: float


def evenly(items: Sequence[Any], count: int) -> list[Any]:
    """``count`` items spread over ``items`` (every k-th), so lengths are representative of the whole."""
    if len(items) <= count:
        return list(items)
    stride = len(items) / count
    return [items[int(i * stride)] for i in range(count)]


def time_steps(model: Any, loss: Any, columns: dict[str, list[str]], batch_size: int, steps: int) -> float:
    """The median seconds of a forward + backward of ``loss`` on ``steps`` consecutive real batches, after a
    warm-up on a quarter batch (allocations, kernels: a quarter of a step's cost, not a whole one)."""
    import torch

    rows = len(columns["anchor"])

    def one_step(start: int, size: int) -> float:
        picked = [(start + i) % rows for i in range(size)]
        began = time.perf_counter()
        features = [model.preprocess([columns[name][i] for i in picked]) for name in ("anchor", "positive", "negative")]
        loss(features, torch.zeros(size)).backward()  # labels: MarginMSE reads one per row, MNRL none
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - began

    model.train()
    one_step(0, max(2, batch_size // 4))
    seconds = [one_step(step * batch_size, batch_size) for step in range(steps)]
    model.eval()
    return statistics.median(seconds)


def time_encoding(model: Any, texts: Sequence[str]) -> float:
    began = time.perf_counter()
    model.encode(list(texts), batch_size=PROBE_TEXTS, normalize_embeddings=True, convert_to_numpy=True,
                 show_progress_bar=False)
    return (time.perf_counter() - began) / max(len(texts), 1)


@contextmanager
def reading_at(model: Any, length: int) -> Iterator[None]:
    """``model`` reads ``length`` tokens a text inside the block (its length as it was, restored after): the
    written model's reading length where the training length differs (``--reading-seq-length``)."""
    before = model.max_seq_length
    model.max_seq_length = length
    try:
        yield
    finally:
        model.max_seq_length = before


def time_reading(model: Any, texts: Sequence[str], reading_length: int) -> float:
    """Seconds per text encoded at ``reading_length`` tokens."""
    with reading_at(model, reading_length):
        return time_encoding(model, texts)


def measure_rates(model: Any, loss: Any, columns: dict[str, list[str]], batch_size: int,
                  documents: Sequence[str], queries: Sequence[str], *, steps: int = PROBE_STEPS,
                  seed: int = 42, reading_length: int | None = None) -> Rates:
    """Step and encoding rates of ``model`` on samples of the real texts; the RNG is reseeded afterwards.
    ``reading_length``: the tokens the written model will read (None: its training length)."""
    from transformers import set_seed

    step_s = time_steps(model, loss, columns, batch_size, steps)
    sample = evenly(documents, PROBE_TEXTS)
    document_s = time_encoding(model, sample)
    reading_s = (document_s if reading_length in (None, model.max_seq_length)
                 else time_reading(model, sample, reading_length))
    rates = Rates(step_s=step_s, document_s=document_s, query_s=time_encoding(model, evenly(queries, PROBE_TEXTS)),
                  reading_document_s=reading_s)
    set_seed(seed)
    return rates


__all__ = ["PROBE_STEPS", "Rates", "measure_rates"]
