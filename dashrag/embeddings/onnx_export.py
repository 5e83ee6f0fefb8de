"""Making the float32 ONNX query encoder of a sentence-transformers model (at save time; needs torch).

The whole pipeline is traced (transformer, pooling, normalisation) by torch's TorchScript
exporter, onnxruntime applies its extended optimisations once and writes the graph with its
weights as external data (a load then opens it with no optimisation pass and no protobuf copy
of the weights), and the result is checked against ``SentenceTransformer.encode`` on
:data:`PROBES`: every coordinate within ``TOLERANCE``, or the export is refused (the record
says why) and the node keeps embedding queries with torch. Only plain text models are
exported: a first module that is a fast-tokenizer ``Transformer``, then modules that need no
more than the token ids and the attention mask.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from dashrag.core.persistence import atomic_write_json
from dashrag.core.shared_files import share_files
from dashrag.embeddings.onnx_query_encoder import (
    GRAPH_FILE,
    MODEL_FILES,
    RECORD_FILE,
    SHARED_LABEL,
    TOKENIZER_FILE,
    TOLERANCE,
    WEIGHTS_FILE,
    OnnxQueryEncoder,
    QueryEncoderRecord,
    model_files_folder,
)

log = logging.getLogger(__name__)

GRAPH_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17
# What the check embeds: short and long, cased, accented, spaced, punctuated, and one text past
# 256 tokens (truncation); batched together, so padding is exercised as well.
PROBES = (
    "Vitamin D deficiency increases the risk of cancer",
    "what is bm25",
    "  Leading and trailing spaces  ",
    "ÉTUDE sur les protéines: α-synuclein & β-amyloid (in vivo)?",
    "0-dimensional biomaterials show inductive properties.",
    "word " * 300,
)


def refuse(cache_key: str, reason: str) -> QueryEncoderRecord:
    return QueryEncoderRecord(exported=False, reason=reason, embedding_cache_key=cache_key)


def unsupported(model: Any) -> str | None:
    """Why the model's pipeline cannot be exported as (ids, mask) -> vector, or None."""
    modules = list(model)
    if not modules or type(modules[0]).__name__ != "Transformer":
        return "the first module is not a sentence-transformers Transformer"
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        return "the model has no fast (tokenizers) tokenizer"
    if getattr(modules[0], "do_lower_case", False):
        return "the Transformer lower-cases texts itself (do_lower_case)"
    unknown = [name for name in tokenizer.model_input_names if name not in GRAPH_INPUTS]
    if unknown:
        return f"the tokenizer produces inputs {unknown} beyond {list(GRAPH_INPUTS)}"
    return None


def export_query_encoder(model: Any, folder: Path, cache_key: str) -> QueryEncoderRecord:
    """Export ``model`` (a loaded SentenceTransformer, at the sequence length the export is to read) into
    ``folder``; the record says what was written.

    The caller holds the model for the whole export (``SharedSentenceTransformer.reading``): its length is
    recorded and checked on the probes, so no other user of a shared model may change it in between."""
    import onnxruntime
    import torch

    folder = Path(folder)
    reason = unsupported(model)
    if reason is not None:
        return _written(folder, refuse(cache_key, reason))
    inputs = [name for name in GRAPH_INPUTS if name in model.tokenizer.model_input_names]

    class Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: Any) -> Any:
            return self.model(dict(zip(inputs, tensors)))["sentence_embedding"]

    example = model.tokenizer(["a short text", "a longer text for the padding"], padding=True, return_tensors="pt")
    with tempfile.TemporaryDirectory(prefix="dashrag-onnx-export-") as tmp:
        raw = Path(tmp) / "raw.onnx"
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
                torch.onnx.export(
                    Pipeline().eval(), tuple(example[name] for name in inputs), str(raw), dynamo=False,
                    input_names=inputs, output_names=["sentence_embedding"], opset_version=OPSET,
                    dynamic_axes={**{name: {0: "batch", 1: "tokens"} for name in inputs},
                                  "sentence_embedding": {0: "batch"}})
            options = onnxruntime.SessionOptions()
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
            options.optimized_model_filepath = str(folder / GRAPH_FILE)
            options.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                             WEIGHTS_FILE)
            options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                             "1024")
            onnxruntime.InferenceSession(str(raw), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # an architecture the exporter cannot trace: torch keeps the queries
            _remove(folder)
            return _written(folder, refuse(cache_key, f"ONNX export failed: {type(exc).__name__}: {exc}"[:500]))
    model.tokenizer.backend_tokenizer.save(str(folder / TOKENIZER_FILE))
    record = QueryEncoderRecord(
        exported=True, embedding_cache_key=cache_key, inputs=inputs, max_seq_length=int(model.max_seq_length),
        special_tokens=int(model.tokenizer.num_special_tokens_to_add(pair=False)),
        dimension=int((getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)()),
        torch=torch.__version__,
        onnxruntime=onnxruntime.__version__)
    expected = model.encode(list(PROBES), normalize_embeddings=False, convert_to_numpy=True,
                            show_progress_bar=False)
    got = OnnxQueryEncoder(folder, record, batch_size=len(PROBES)).encode(list(PROBES), normalize=False)
    difference = float(np.abs(got - expected).max())
    if not difference <= TOLERANCE:  # also refuses NaN
        _remove(folder)
        return _written(folder, refuse(cache_key, f"the ONNX vectors differ from torch's by {difference:.2e} "
                                                  f"(more than {TOLERANCE:g})"))
    return _written(folder, record.model_copy(update={"max_abs_difference": difference}))


def _written(folder: Path, record: QueryEncoderRecord) -> QueryEncoderRecord:
    if not record.exported:
        log.warning("no ONNX query encoder: %s (queries will be embedded with torch)", record.reason)
    atomic_write_json(folder / RECORD_FILE, record.model_dump(mode="json"))
    return record


def _remove(folder: Path) -> None:
    for name in (GRAPH_FILE, WEIGHTS_FILE, TOKENIZER_FILE):
        (folder / name).unlink(missing_ok=True)


def save_export(source: Path, node_dir: Path) -> None:
    """Put the export recorded in ``source`` (a node's folder or an export cache entry) into a node's folder:
    the record beside the node's state, the model files once per saved folder (``core/shared_files``),
    referenced from the node. Copies, not hard links: a link added or removed elsewhere changes a file's
    ctime, which would send every load of this tree to the full checksum (``persistence.file_stat``)."""
    if not (Path(source) / RECORD_FILE).is_file():
        return
    shutil.copyfile(Path(source) / RECORD_FILE, Path(node_dir) / RECORD_FILE)
    files = model_files_folder(source)
    if files is not None:
        share_files(node_dir, SHARED_LABEL, files, MODEL_FILES)
