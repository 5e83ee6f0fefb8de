"""The float32 ONNX query encoder a saved sentence-transformers node carries: queries without torch.

A cold ``dashrag query`` on a dense tree used to import torch and sentence-transformers and
load the model to embed one short text: as long as everything else together. So when a
sentence-transformers embedding node is saved, its model is exported to ONNX (float32,
the whole sentence-transformers pipeline: transformer, pooling, normalisation; see
``onnx_export``) into the node's state, and a loaded node embeds *queries* with it on
onnxruntime. Its vectors equal torch's within :data:`TOLERANCE` (checked when it is made,
or it is not saved), so the saved document vectors, embedded by torch, stay valid.

The state files (checksummed by the manifest like any state):

    query_encoder.json            in the node's folder: the record (:class:`QueryEncoderRecord`): what was
                                  exported and how close it came to torch, or why nothing was
    query_encoder.shared.json     in the node's folder: which shared folder of the saved folder holds the
                                  three model files (``core/shared_files``: stored once per saved folder,
                                  however many nodes use the model)
    query_encoder.onnx            the graph (onnxruntime's extended optimisations applied)
    query_encoder.weights         its float32 weights (external data, read without a protobuf copy)
    query_encoder.tokenizer.json  the model's fast tokenizer (``tokenizers``)

A folder saved before the shared store has the three model files in the node's folder itself, and
still loads. A folder saved before the export existed, or whose export was refused, has no model
files: the node embeds queries with torch as before.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dashrag.core.persistence import load_json
from dashrag.core.shared_files import shared_folder
from dashrag.embeddings.onnx_batches import run_in_buckets
from dashrag.embeddings.overflow import unit_rows
from dashrag.errors import PersistenceError

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1
TOLERANCE = 1e-4  # largest |onnx - torch| allowed in any coordinate of any probe vector
RECORD_FILE = "query_encoder.json"
GRAPH_FILE = "query_encoder.onnx"
WEIGHTS_FILE = "query_encoder.weights"
TOKENIZER_FILE = "query_encoder.tokenizer.json"
FILES = (RECORD_FILE, GRAPH_FILE, WEIGHTS_FILE, TOKENIZER_FILE)
MODEL_FILES = (GRAPH_FILE, WEIGHTS_FILE, TOKENIZER_FILE)  # stored once per saved folder (core/shared_files)
SHARED_LABEL = "query_encoder"  # the node's reference: query_encoder.shared.json

_sessions: dict[str, Any] = {}
_lock = threading.Lock()


class QueryEncoderRecord(BaseModel):
    """``query_encoder.json``: written by the export, read by a load."""

    model_config = ConfigDict(extra="forbid")

    format: int = Field(EXPORT_FORMAT, ge=1, le=EXPORT_FORMAT)
    exported: bool
    reason: str | None = Field(None, description="Why no encoder was exported (exported: false).")
    embedding_cache_key: str
    inputs: list[str] = Field(default_factory=list, description="The graph's inputs, in the tokenizer's names.")
    max_seq_length: int = 0
    special_tokens: int = Field(0, ge=0, description="Tokens the tokenizer adds to one text ([CLS], [SEP]).")
    dimension: int = 0
    max_abs_difference: float | None = Field(None, description="Largest |onnx - torch| over the probe texts.")
    torch: str | None = None
    onnxruntime: str | None = None


def read_record(folder: Path) -> QueryEncoderRecord | None:
    """The record in a node's folder; None when the folder has none (saved before the export existed)."""
    path = Path(folder) / RECORD_FILE
    if not path.is_file():
        return None
    try:
        return QueryEncoderRecord.model_validate(load_json(path))
    except ValidationError as exc:
        raise PersistenceError(f"{path}: not a query encoder record ({exc.errors()[0]['msg']})") from None


def model_files_folder(folder: Path) -> Path | None:
    """Where the model files of the export recorded in ``folder`` lie: the shared folder its reference names,
    else ``folder`` itself when it holds them (saved before the shared store), else None."""
    shared = shared_folder(folder, SHARED_LABEL)
    if shared is not None:
        return shared
    return Path(folder) if all((Path(folder) / name).is_file() for name in MODEL_FILES) else None


class OnnxQueryEncoder:
    """Embeds texts with an exported sentence-transformers pipeline on onnxruntime (no torch).

    ``encode`` gives what ``SentenceTransformer.encode(texts, normalize_embeddings=...)`` gives, within
    :data:`TOLERANCE`; ``window_budget`` and ``token_offsets`` are what ``window_average`` needs. The
    session is opened on first use and shared by every node of the process with the same export.
    """

    def __init__(self, folder: Path, record: QueryEncoderRecord, batch_size: int):
        self.folder = Path(folder)  # where the model files lie
        self.record = record
        self.batch_size = batch_size
        self._tokenizers: dict[bool, Any] = {}

    @classmethod
    def open(cls, folder: Path, batch_size: int) -> OnnxQueryEncoder | None:
        """The encoder saved in ``folder``, or None where there is none (torch then embeds queries)."""
        record = read_record(folder)
        if record is None or not record.exported:
            return None
        files = model_files_folder(folder)
        if files is None:
            missing = [name for name in MODEL_FILES if not (Path(folder) / name).is_file()]
            raise PersistenceError(f"{folder}: the query encoder's {', '.join(missing)} missing")
        return cls(files, record, batch_size)

    @property
    def dimension(self) -> int:
        return self.record.dimension

    def session(self) -> Any:
        """The process-wide one-thread onnxruntime session of this export (idle threads do not spin)."""
        key = str((self.folder / GRAPH_FILE).resolve())
        with _lock:
            if key not in _sessions:
                import onnxruntime

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                # the saved graph is already optimised (onnx_export): re-optimising it at every load costs time
                options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
                _sessions[key] = onnxruntime.InferenceSession(key, options, providers=["CPUExecutionProvider"])
            return _sessions[key]

    def _tokenizer(self, truncate: bool) -> Any:
        with _lock:
            if truncate not in self._tokenizers:
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(self.folder / TOKENIZER_FILE))
                tokenizer.no_padding()
                if truncate:
                    tokenizer.enable_truncation(max_length=self.record.max_seq_length)
                else:
                    tokenizer.no_truncation()
                self._tokenizers[truncate] = tokenizer
            return self._tokenizers[truncate]

    def encode(self, texts: list[str], normalize: bool) -> np.ndarray:
        """(n, dimension) float32: the pipeline's sentence embeddings, rescaled to unit length with ``normalize``."""
        session = self.session()
        names = self.record.inputs

        def forward(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            return session.run(None, {name: feeds[name] for name in names})[0]

        encoded = self._tokenizer(truncate=True).encode_batch(texts)
        vectors = run_in_buckets([e.ids for e in encoded], self.dimension, self.batch_size, 0, forward)
        return unit_rows(vectors) if normalize else vectors

    def window_budget(self) -> int:
        """Tokens of text per window: the sequence length less the special tokens."""
        return self.record.max_seq_length - self.record.special_tokens

    def token_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """Each text's tokens as character spans, special tokens left out, nothing truncated."""
        return [list(e.offsets) for e in self._tokenizer(truncate=False).encode_batch(texts, add_special_tokens=False)]
