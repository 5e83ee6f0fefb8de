"""Running a transformer's ONNX graph over a list of texts' token ids: padding, length buckets, threads.

Shared by the two onnxruntime encoders: ``MiniLMOnnxEmbedding`` (the packaged int8 file) and the
float32 query encoder a saved sentence-transformers node carries (``onnx_query_encoder``). A text's
vector does not depend on its batch (checked: identical alone and padded), so how texts are cut
into batches is free to be chosen for speed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dashrag.embeddings.base import SMALL_INPUT


def padded(token_ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(ids, attention mask) of a batch, padded with 0 to its longest text."""
    ids = np.zeros((len(token_ids), max(len(t) for t in token_ids)), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, tokens in enumerate(token_ids):
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
    return ids, mask


def length_buckets(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Batches of text indices with similar token counts (sorted by length, then cut every ``batch_size``),
    longest first: little padding, and the costliest batches start before the cheap ones."""
    order = np.argsort(np.asarray(lengths), kind="stable")[::-1]
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def mean_pool(token_vectors: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """The mean of each text's token vectors over its real (unpadded) tokens."""
    mask = attention_mask[..., None].astype(np.float32)
    return (token_vectors * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)


Forward = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (ids, mask) of one padded batch -> its rows


def run_in_buckets(token_ids: Sequence[Sequence[int]], dimension: int, batch_size: int, threads: int,
                   forward: Forward) -> np.ndarray:
    """``forward`` over length buckets of ``batch_size`` texts, ``threads`` buckets at once (0: one per core;
    a few texts, a query, always on one): a forward pass on a one-thread onnxruntime session releases the GIL,
    so buckets run side by side without the per-operator waits of one session on several threads."""
    workers = 1 if len(token_ids) <= SMALL_INPUT else (threads or os.cpu_count() or 1)
    vectors = np.empty((len(token_ids), dimension), dtype=np.float32)

    def run(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return block, forward(*padded([token_ids[i] for i in block]))

    buckets = length_buckets([len(t) for t in token_ids], batch_size)
    if workers == 1 or len(buckets) == 1:
        done: Iterator[tuple[np.ndarray, np.ndarray]] = map(run, buckets)
    else:
        pool = ThreadPoolExecutor(max_workers=min(workers, len(buckets)), thread_name_prefix="onnx-encoder")
        done = pool.map(run, buckets)
        pool.shutdown(wait=False)  # map has queued every bucket; the threads end when they are done
    for block, block_vectors in done:
        vectors[block] = block_vectors
    return vectors
