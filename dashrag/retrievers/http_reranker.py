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
"""

from __future__ import annotations

from typing import Any

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


class HttpRerankerParams(RemoteRerankerParams):
    truncate: bool = Field(True, description="Ask the server to truncate texts longer than its model reads.")


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
    operation="Sends the child's fetch_k candidates to the /rerank endpoint in parallel batches and keeps the top_k.",
)
class HttpReranker(RemoteReranker[HttpRerankerParams]):
    PATH = "/rerank"

    def request_body(self, query: str, texts: list[str]) -> dict[str, Any]:
        return {"query": query, "texts": texts, "truncate": self.params.truncate}

    def scores_from(self, answer: Any, count: int) -> list[float]:
        return parse_scores(answer, count)
