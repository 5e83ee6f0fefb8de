"""HttpReranker: relevance scores from a Text Embeddings Inference-style ``/rerank`` endpoint.

The server does the model work: ``POST {api_base}/rerank`` with
``{"query": ..., "texts": [...], "truncate": true}`` answers
``[{"index": i, "score": s}, ...]`` (one entry per text, any order), as Hugging
Face's Text Embeddings Inference and compatible services do. Texts go in batches
of ``batch_size``, at most ``max_workers`` requests in flight at once (a thread
pool: the waiting is network I/O), each with ``timeout_s``.

The two roles (over a child, or a reranker only), batching, the key by reference,
no redirects and the errors for malformed answers are every HTTP reranker's
(:mod:`dashrag.retrievers.remote_reranker`). The API key's variable is
``DASHRAG_RERANKER_API_KEY`` by default; many TEI servers run without
authentication, so an unset variable sends no header unless ``api_key_required``.
Every malformed answer (not JSON, not a list, an entry without an index, an
index out of range or repeated, a non-finite score, a text left unscored) is a
:class:`RerankerAnswerError` that names the problem and the batch. An entry with
an index and no ``score`` scores 0.0, as the reference's service counts it.

``protocol: score`` speaks the fragment service's reranker instead: one ``POST
{api_base}/score`` per text (``{"model"?, "text_1": query, "text_2": text}``, answered
``{"data": [{"index": 0, "score": s}]}``, vLLM's Score API), at most
``max_parallelism`` (10, the reference's ``MAX_PARALLELISM``) in flight at once.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from dashrag.core.registry import register
from dashrag.retrievers.remote_reranker import (
    RemoteReranker,
    RemoteRerankerParams,
    RerankerAnswerError,
    plan_batches,
    scores_by_index,
)

__all__ = ["HttpReranker", "HttpRerankerParams", "RerankerAnswerError", "parse_scores", "plan_batches"]


def parse_scores(answer: Any, count: int) -> list[float]:
    """Scores in text order from a TEI ``[{index, score}]`` answer for ``count`` texts; else RerankerAnswerError."""
    return scores_by_index(answer, count, "score", missing_score=0.0)


MAX_PARALLELISM = 10  # the fragment service's /score calls in flight at once


class HttpRerankerParams(RemoteRerankerParams):
    truncate: bool = Field(True, description="Ask the server to truncate texts longer than its model reads.")
    protocol: Literal["rerank", "score"] = Field("rerank", description=(
        "rerank: TEI's batched POST {api_base}/rerank; score: one POST {api_base}/score per text "
        "({model?, text_1: query, text_2: text}), as the fragment service calls its reranker."))
    model: str | None = Field(None, min_length=1, max_length=200, description=(
        "score protocol: the model named in each request (None: not sent, the server's own)."))
    max_parallelism: int = Field(MAX_PARALLELISM, ge=1, le=64, description=(
        "score protocol: /score requests in flight at once (the fragment service's MAX_PARALLELISM)."))


class RerankProtocol:
    """TEI's ``/rerank``: ``batch_size`` texts a request, ``max_workers`` requests at once."""

    path = "/rerank"

    def body(self, params: HttpRerankerParams, query: str, texts: list[str]) -> dict[str, Any]:
        return {"query": query, "texts": texts, "truncate": params.truncate}

    def scores(self, answer: Any, count: int) -> list[float]:
        return parse_scores(answer, count)

    def texts_per_request(self, params: HttpRerankerParams) -> int:
        return params.batch_size

    def requests_in_flight(self, params: HttpRerankerParams) -> int:
        return params.max_workers


class ScoreProtocol(RerankProtocol):
    """The ``/score`` API (vLLM's, what the fragment service calls): one text a request,
    ``{"model"?, "text_1": query, "text_2": text}`` answered ``{"data": [{"index": 0, "score": s}]}``,
    ``max_parallelism`` requests at once."""

    path = "/score"

    def body(self, params: HttpRerankerParams, query: str, texts: list[str]) -> dict[str, Any]:
        (text,) = texts
        return {**({"model": params.model} if params.model else {}), "text_1": query, "text_2": text}

    def scores(self, answer: Any, count: int) -> list[float]:
        if not isinstance(answer, dict) or "data" not in answer:
            raise RerankerAnswerError(f"expected a JSON object with 'data', got {type(answer).__name__}")
        return scores_by_index(answer["data"], count, "score")

    def texts_per_request(self, params: HttpRerankerParams) -> int:
        return 1

    def requests_in_flight(self, params: HttpRerankerParams) -> int:
        return params.max_parallelism


PROTOCOLS: dict[str, RerankProtocol] = {"rerank": RerankProtocol(), "score": ScoreProtocol()}


@register(
    kind="retriever",
    icon="Globe",
    category="rerank",
    en=("HTTP reranker", "Re-scores candidates with a Text Embeddings Inference-style /rerank endpoint."),
    es=(
        "Reordenador HTTP",
        "Vuelve a puntuar candidatos con un endpoint /rerank al estilo de Text Embeddings Inference.",
    ),
    representation={
        "en": "HTTP rerank top {top_k} of {fetch_k} ({api_base})",
        "es": "Reordenación HTTP: {top_k} mejores de {fetch_k} ({api_base})",
    },
    operation="Sends the child's fetch_k candidates to /rerank in parallel batches (or /score, one per text) and keeps "
    "the top_k.",
)
class HttpReranker(RemoteReranker[HttpRerankerParams]):
    PATH = "/rerank"

    @property
    def protocol(self) -> RerankProtocol:
        return PROTOCOLS[self.params.protocol]

    @property
    def url(self) -> str:
        return self.params.api_base.rstrip("/") + self.protocol.path

    def request_body(self, query: str, texts: list[str]) -> dict[str, Any]:
        return self.protocol.body(self.params, query, texts)

    def scores_from(self, answer: Any, count: int) -> list[float]:
        return self.protocol.scores(answer, count)

    def texts_per_request(self) -> int:
        return self.protocol.texts_per_request(self.params)

    def requests_in_flight(self) -> int:
        return self.protocol.requests_in_flight(self.params)
