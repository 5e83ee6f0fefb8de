"""CrossEncoderRetriever: re-score one child's candidates with a sentence-transformers CrossEncoder.

A cross-encoder reads the query and a chunk together and outputs one relevance
score: far more accurate than comparing two separately computed embeddings, far
too slow for a whole corpus. So the child proposes ``fetch_k`` candidates and
the cross-encoder orders them; the result's scores are the model's own (for the
usual one-label rerankers, a sigmoid in 0..1), ties kept in the child's order.

DashAI's ``SentenceTransformerCrossEncoderRetriever`` configs load as they are (its class name
and ``model_name`` are aliases); as there, the child's own ``top_k`` sets how many candidates
are re-scored unless ``fetch_k`` says otherwise, and ``score_chunks`` gives DashAI's distance,
``1 - sigmoid(logit)``.

The model: ``model`` is a local cross-encoder directory or a Hugging Face name.
The default, ``cross-encoder/ms-marco-MiniLM-L-6-v2``, is the common English
passage reranker; no package ships its weights and dashrag never downloads, so
it works where the model is already in the local Hugging Face cache and
otherwise fails validation, with a message that says
how to provide it (``huggingface-cli download`` where there is network, then
``model`` = that folder). The model is loaded when the tree is fitted (a missing
model shows up at build time, not at the first query) or, after ``load``, at the
first query; saved state is nothing but the config.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from pydantic import Field, field_validator
from scipy.special import expit

from dashrag.core.ask import Ask
from dashrag.core.params import (
    ComponentParams,
    ComponentSpec,
    ParamKind,
    components_field,
    kind_field,
    less_or_equal,
    spec,
    top_k_field,
)
from dashrag.core.ranking import by_distance, rerank_by_scores
from dashrag.core.registry import register
from dashrag.core.retriever import Answer, Result, SingleChildRetriever, check_query
from dashrag.documents.model import ScoredChunk
from dashrag.embeddings.base import ModelUnavailableError
from dashrag.embeddings.model_source import LoadedModels, ModelSource, resolve_model
from dashrag.embeddings.sentence_transformer import device_field

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"

_cross_encoders = LoadedModels("a cross-encoder")


def load_cross_encoder(source: ModelSource, device: str, max_length: int | None) -> Any:
    """The process-wide CrossEncoder for this folder, device and max length."""

    def load() -> Any:
        from sentence_transformers import CrossEncoder

        return CrossEncoder(str(source.path), device=device, max_length=max_length)

    return _cross_encoders.get(source, device, max_length, load)


def cross_encoder_logits(model: Any, pairs: list[tuple[str, str]], batch_size: int) -> np.ndarray:
    """A loaded CrossEncoder's raw output (no activation) for each (query, text) pair, in ``batch_size`` batches:
    what the component and the rag-reranker backend (dashrag/rerank/backends.py) both score with."""
    if not pairs:
        return np.empty(0, dtype=np.float64)
    import torch

    scores = model.predict(pairs, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False,
                           activation_fn=torch.nn.Identity())
    return np.asarray(scores, dtype=np.float64).reshape(len(pairs))


def locate_cross_encoder(model: str) -> ModelSource:
    return resolve_model(model, what="cross-encoder", default_org="cross-encoder")


class CrossEncoderParams(ComponentParams):
    children: list[ComponentSpec] = components_field(
        "retriever", [spec("DenseEmbeddingRetriever")], min_length=1, max_length=1,
        description="The one retriever whose candidates the cross-encoder re-scores.")
    model: str = kind_field(ParamKind.MODEL_SOURCE, DEFAULT_CROSS_ENCODER, min_length=1, description=(
        "A local cross-encoder folder, or a Hugging Face name already in the local cache (never downloaded)."))
    batch_size: int = Field(32, ge=1, le=4096, description="(query, chunk) pairs per forward pass.")
    max_length: int | None = Field(None, ge=8, le=8192, description=(
        "Tokens read per pair; None: the model's own limit."))
    device: str = device_field()
    top_k: int = top_k_field(5)
    fetch_k: int | None = Field(None, ge=1, le=10000, description=(
        "How many candidates to ask the child for (None: as many as the child's own top_k, as DashAI)."))

    RULES = (less_or_equal("top_k", "fetch_k"),)
    ALIASES = {"model_name": "model"}  # DashAI's name of the field

    @field_validator("device")
    @classmethod
    def _torch_device_name(cls, value: str) -> str:
        return value.lower()  # torch spells devices in lower case


@register(
    kind="retriever",
    icon="ListOrdered",
    category="rerank",
    en=("Cross-encoder reranker", "Re-scores a retriever's candidates by reading query and chunk together."),
    es=(
        "Reordenador cross-encoder",
        "Vuelve a puntuar los candidatos de un recuperador leyendo consulta y fragmento juntos.",
    ),
    representation={
        "en": "Cross-encoder top {top_k} of {fetch_k} ({model})",
        "es": "Cross-encoder: {top_k} mejores de {fetch_k} ({model})",
    },
    operation="Scores each of the child's fetch_k candidates with the cross-encoder and keeps the top_k.",
    aliases=("SentenceTransformerCrossEncoderRetriever",),  # DashAI's class name
)
class CrossEncoderRetriever(SingleChildRetriever[CrossEncoderParams]):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._model: Any = None

    @classmethod
    def availability_problem(cls, params: CrossEncoderParams) -> str | None:
        """A model that is not on this machine fails validation, naming it and how to get it (DashAI's
        ms-marco cross-encoders are downloaded on first use there; dashrag never downloads)."""
        try:
            locate_cross_encoder(params.model)
        except ModelUnavailableError as exc:
            return str(exc)
        return None

    def model(self) -> Any:
        """The loaded CrossEncoder (loads it on first call)."""
        if self._model is None:
            self._model = load_cross_encoder(locate_cross_encoder(self.params.model), self.params.device,
                                             self.params.max_length)
        return self._model

    def _fit(self) -> None:
        self.model()

    def _close(self) -> None:
        self._model = None

    def logits(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """The model's raw output (no activation, as DashAI reads it) for each (query, text) pair,
        in ``batch_size`` batches."""
        return cross_encoder_logits(self.model(), pairs, self.params.batch_size)

    def predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """The relevance of each pair in 0..1: the sigmoid of the model's logit (what sentence-transformers gives
        a one-label reranker by default, and what DashAI's distance ``1 - sigmoid(logit)`` is taken from)."""
        return expit(self.logits(pairs)).astype(np.float32)

    def rerank_texts(self, query: str, texts: Sequence[str]) -> list[float]:
        """Each text's relevance to ``query`` in 0..1 (:meth:`predict`), in text order: what every text reranker
        answers (the HTTP rerankers, a stage of :class:`dashrag.rerank.RerankPipeline`). Needs no child: the
        model reads the texts it is given."""
        return [float(s) for s in self.predict([(query, t) for t in texts])]

    def _rescore(self, queries: list[str], answers: Sequence[Answer], ask: Ask) -> list[Result]:
        k = self.top_k(ask)
        pairs = [(q, c.chunk.text) for q, (chunks, _) in zip(queries, answers) for c in chunks]
        scores = self.predict(pairs)  # every query's pairs in one call
        results, start = [], 0
        for chunks, trace in answers:
            results.append(self._ranked(chunks, scores[start : start + len(chunks)], trace, k))
            start += len(chunks)
        return results

    def _ranked(self, candidates: Sequence[ScoredChunk], scores: np.ndarray, child_trace: dict, k: int) -> Result:
        chosen, order = rerank_by_scores(candidates, scores, k, self.component_name)
        selection = {
            "summary": f"cross-encoder kept {len(chosen)} of {len(candidates)} candidates",
            "candidates": len(candidates),
            "moves": [
                {"chunk_id": candidates[i].id, "child_rank": int(i) + 1, "rank": r + 1, "score": float(scores[i])}
                for r, i in enumerate(order)
            ],
        }
        return chosen, [child_trace], selection

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """DashAI's distance ``1 - sigmoid(logit)``, ascending; ties by corpus order; unknown ids raise
        UnknownChunkError."""
        query = check_query(query)
        chunks = self.require_infra().chunks
        rows = chunks.rows_of(chunk_ids)
        distances = 1.0 - expit(self.logits([(query, text) for text in chunks.texts_at(rows.tolist())]))
        return by_distance(chunk_ids, rows, distances)
