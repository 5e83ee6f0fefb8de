"""The rag-reranker's backends over dashrag's own scorers: a local cross-encoder, Cohere's and Jina's hosted
rerankers, and a no-op.

Each is a :class:`~dashrag.rerank.spi.Reranker` whose ``precise_rerank`` scores the chunks' texts with a
scorer dashrag already has (the cross-encoder component's model loading and scoring; the HTTP rerankers'
protocols, batching, no-redirect rule and error messages: dashrag/retrievers/), writes each chunk's
``score`` and returns the best ``top_n``. The scoring runs in a worker thread, so an event loop keeps serving.

Models are never downloaded: ``bge_reranker_v2_m3()`` and ``minilm_l6()`` name the reference's models, which
load when they are on this machine (a folder, or the local Hugging Face cache) and otherwise fail at once
with a ConfigError naming the model and how to provide it.

The hosted backends take ``api_key=`` as the reference's do; the key is held in memory only (never in a
repr, a log or an error), and when none is given it is read from ``COHERE_API_KEY`` / ``JINA_API_KEY`` at
each request, as the components do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import SecretStr
from scipy.special import expit

from dashrag.core.factory import build_component
from dashrag.errors import ConfigError
from dashrag.rerank.spi import Reranker
from dashrag.rerank.types import Chunk, RequestContext
from dashrag.retrievers.cross_encoder import cross_encoder_logits, load_cross_encoder, locate_cross_encoder
from dashrag.retrievers.remote_reranker import RemoteReranker

BGE_RERANKER_V2_M3 = "BAAI/bge-reranker-v2-m3"
MINILM_L6 = "cross-encoder/ms-marco-MiniLM-L-6-v2"


def best_first(chunks: Sequence[Chunk], scores: Sequence[float], top_n: int) -> list[Chunk]:
    """Write each chunk's score, then the best ``top_n`` of them, best first (ties keep their order)."""
    for chunk, score in zip(chunks, scores):
        chunk.score = float(score)
    order = np.lexsort((np.arange(len(chunks)), -np.asarray(scores, dtype=np.float64)))
    return [chunks[i] for i in order[:top_n]]


class NoopReranker(Reranker):
    """Reranks nothing: every chunk scores 1.0 and keeps its place (the reference's smoke backend)."""

    async def precise_rerank(self, ctx: RequestContext, query: str, chunks: Sequence[Chunk],
                             top_n: int) -> list[Chunk]:
        return best_first(chunks, [1.0] * len(chunks), top_n)


class TextScoringReranker(Reranker):
    """A backend whose precise stage is one score per text (higher is better), computed by :meth:`score_texts`."""

    def score_texts(self, query: str, texts: list[str]) -> list[float]:
        raise NotImplementedError

    async def precise_rerank(self, ctx: RequestContext, query: str, chunks: Sequence[Chunk],
                             top_n: int) -> list[Chunk]:
        scores = await asyncio.to_thread(self.score_texts, query, [c.text for c in chunks])
        return best_first(chunks, scores, top_n)


class SentenceTransformersCrossEncoder(TextScoringReranker):
    """A local cross-encoder (sentence-transformers): each text's relevance in 0..1, the sigmoid of its logit.

    ``model``: a cross-encoder folder or a Hugging Face name already on this machine; located here, loaded at
    the first score, shared by every backend naming the same folder.
    """

    def __init__(self, model: str = BGE_RERANKER_V2_M3, *, device: str = "cpu", batch_size: int = 32,
                 max_length: int | None = None):
        self.model_name = model
        self._source = locate_cross_encoder(model)  # a model not on this machine: a ConfigError saying how to get it
        self._device, self._batch_size, self._max_length = device, batch_size, max_length

    def score_texts(self, query: str, texts: list[str]) -> list[float]:
        model = load_cross_encoder(self._source, self._device, self._max_length)
        return [float(s) for s in expit(cross_encoder_logits(model, [(query, t) for t in texts], self._batch_size))]


def bge_reranker_v2_m3(device: str = "cpu") -> SentenceTransformersCrossEncoder:
    """The reference's default cross-encoder, BAAI/bge-reranker-v2-m3 (multilingual), when it is on this machine."""
    return SentenceTransformersCrossEncoder(BGE_RERANKER_V2_M3, device=device)


def minilm_l6(device: str = "cpu") -> SentenceTransformersCrossEncoder:
    """The reference's fast English cross-encoder, cross-encoder/ms-marco-MiniLM-L-6-v2, when it is on this machine."""
    return SentenceTransformersCrossEncoder(MINILM_L6, device=device)


class HostedReranker(TextScoringReranker):
    """A hosted rerank API through its dashrag component (``COMPONENT``): the protocol, batches and errors are
    the component's; the key is ``api_key`` (in memory) or, when None, the component's variable at each request."""

    COMPONENT: str
    DEFAULT_MODEL: str

    def __init__(self, api_key: str | None = None, model: str | None = None, *, api_base: str | None = None,
                 timeout_s: float = 30.0):
        self._api_key = None if api_key is None else SecretStr(api_key)
        params: dict[str, Any] = {"model": model or self.DEFAULT_MODEL, "timeout_s": timeout_s}
        if api_base is not None:
            params["api_base"] = api_base
        component = build_component({"component": self.COMPONENT, "params": params}, "retriever")
        assert isinstance(component, RemoteReranker)
        self.component: RemoteReranker[Any] = component

    def score_texts(self, query: str, texts: list[str]) -> list[float]:
        if self._api_key is None:
            return self.component.rerank_texts(query, texts)
        return self.component.score_texts(query, texts, self._api_key.get_secret_value())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.component.params.model!r}, api_base={self.component.url!r})"


class CohereReranker(HostedReranker):
    """Cohere's Rerank API v2 (``rerank-v3.5`` by default), or a server that speaks it (``api_base``)."""

    COMPONENT = "CohereReranker"
    DEFAULT_MODEL = "rerank-v3.5"


class JinaReranker(HostedReranker):
    """Jina AI's Reranker API (``jina-reranker-v2-base-multilingual`` by default), or a server that speaks it."""

    COMPONENT = "JinaReranker"
    DEFAULT_MODEL = "jina-reranker-v2-base-multilingual"


BACKENDS = ("noop", "sentence-transformers", "cohere", "jina")


def backend_named(name: str, model: str | None = None, api_base: str | None = None) -> Reranker:
    """The backend ``dashrag rerank --backend`` names: ``noop``, ``sentence-transformers`` (``model``, default
    bge-reranker-v2-m3), ``cohere`` or ``jina`` (their key from ``COHERE_API_KEY`` / ``JINA_API_KEY`` at each
    request; ``api_base``: a compatible server). Anything else is a ConfigError listing the names."""
    if name == "noop":
        if model is not None:
            raise ConfigError("--model: the noop backend reranks with no model")
        return NoopReranker()
    if name == "sentence-transformers":
        return SentenceTransformersCrossEncoder(model or BGE_RERANKER_V2_M3)
    hosted = {"cohere": CohereReranker, "jina": JinaReranker}.get(name)
    if hosted is None:
        raise ConfigError(f"--backend: {name!r} is not one of {', '.join(BACKENDS)}")
    return hosted(model=model, api_base=api_base)
