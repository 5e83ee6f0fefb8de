"""One loaded sentence-transformers model per folder and device, read at each caller's own sequence length.

Components over the same weights often differ only in how many tokens they read (``max_seq_length``): a tree's
dense children at 128 and at the model's own 256, a fine-tuning teacher at 64. Loading a model costs seconds of
CPU and its memory, and the weights are the same at every length: only the truncation differs. So the process
keeps one model per (folder, device), and each use sets its caller's length on it for that use alone, under the
model's lock (one forward pass at a time per model, which encoding needs anyway: the model and torch's thread
setting are shared), putting the model's own length back afterwards.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator


class SharedSentenceTransformer:
    """A loaded SentenceTransformer that every component over its folder and device uses, each at its own length."""

    def __init__(self, model: Any):
        self._model = model
        self._own_length = model.max_seq_length  # what the model's files say (None where they say nothing)
        self._lock = threading.Lock()

    def length(self, max_seq_length: int | None) -> int:
        """The tokens a text is read at for a caller asking for ``max_seq_length`` (None: the model's own)."""
        return int(self._own_length if max_seq_length is None else max_seq_length)

    @contextmanager
    def reading(self, max_seq_length: int | None) -> Iterator[Any]:
        """The model, truncating texts at ``max_seq_length`` tokens (None: its own), held by this caller alone
        until the block ends."""
        with self._lock:
            self._model.max_seq_length = self._own_length if max_seq_length is None else max_seq_length
            try:
                yield self._model
            finally:
                self._model.max_seq_length = self._own_length

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer, for what does not depend on the length (token offsets, special tokens)."""
        return self._model.tokenizer

    @property
    def dimension(self) -> int:
        getter = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        return int(getter())
