"""CohereReranker: relevance scores from Cohere's Rerank API v2 (``POST {api_base}/v2/rerank``), or any server
that speaks it (a gateway, a proxy, a self-hosted model behind the same protocol).

The protocol (docs.cohere.com, "Rerank API (v2)"): the request is
``{"model", "query", "documents": [text, ...], "top_n", "max_tokens_per_doc"?}`` with the key as
``Authorization: Bearer``; the answer is ``{"id", "results": [{"index", "relevance_score"}, ...], "meta"}``,
best first, ``index`` into ``documents``. ``top_n`` is sent as the number of texts in the
request, because every text needs its score (to re-order a child's candidates, for
``score_chunks``, as a stage of the rerank pipeline): an answer that leaves a text out is an
error, as is an index outside the request, a text scored twice, or a score that is missing or not
a finite number. Cohere's scores lie in 0..1, higher is more relevant.

Everything else (the two roles, batches of ``batch_size`` texts, at most ``max_workers``
requests at once, the key by reference, ``COHERE_API_KEY`` by default and required unless
``api_key_required`` is false, no redirect followed) is every HTTP reranker's
(:mod:`dashrag.retrievers.remote_reranker`). Cohere accepts up to 1,000 documents per
request and recommends far fewer; ``batch_size`` keeps requests small.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from dashrag.core.params import ComponentSpec, ParamKind, component_field, kind_field, spec
from dashrag.core.registry import register
from dashrag.retrievers.remote_reranker import (
    RemoteReranker,
    RemoteRerankerParams,
    RerankerAnswerError,
    scores_by_index,
)


def results_scores(answer: Any, count: int) -> list[float]:
    """Scores in text order from a Cohere- or Jina-style ``{"results": [{index, relevance_score}]}`` answer."""
    if not isinstance(answer, dict) or "results" not in answer:
        raise RerankerAnswerError(f"expected a JSON object with 'results', got {_shape(answer)}")
    return scores_by_index(answer["results"], count, "relevance_score")


def _shape(answer: Any) -> str:
    return f"an object with keys {sorted(answer)[:8]}" if isinstance(answer, dict) else type(answer).__name__


class CohereRerankerParams(RemoteRerankerParams):
    api_base: str = kind_field(ParamKind.ENDPOINT, "https://api.cohere.com", pattern=r"^https?://\S+$",
                               description="Base URL of the service; requests go to {api_base}/v2/rerank.")
    credential: ComponentSpec = component_field(
        "credential", spec("EnvCredential", var="COHERE_API_KEY"),
        description="Where the API key comes from (EnvCredential: an environment variable's name); sent as a bearer "
        "token. The key itself is never stored.")
    api_key_required: bool = Field(True, description=(
        "Refuse to send a request when the credential's variable is unset (Cohere's own service needs a key; a "
        "compatible server on your network may not)."))
    model: str = Field("rerank-v3.5", min_length=1, max_length=200, description="The rerank model the service runs.")
    max_tokens_per_doc: int | None = Field(None, ge=1, le=32_768, description=(
        "Tokens of each text the service reads (it truncates longer ones); None: not sent, the service's default."))
    batch_size: int = Field(96, ge=1, le=1_000, description="Texts per request (Cohere accepts at most 1,000).")


@register(
    kind="retriever",
    icon="Globe",
    category="rerank",
    en=("Cohere reranker", "Re-scores candidates with Cohere's Rerank API (v2), or a server that speaks it."),
    es=("Reordenador Cohere", "Vuelve a puntuar candidatos con la API Rerank de Cohere (v2) o un servidor compatible."),
    representation={
        "en": "Cohere rerank {model} top {top_k} of {fetch_k}",
        "es": "Reordenación Cohere {model}: {top_k} mejores de {fetch_k}",
    },
    operation="Sends the child's fetch_k candidates to {api_base}/v2/rerank in batches and keeps the top_k.",
)
class CohereReranker(RemoteReranker[CohereRerankerParams]):
    PATH = "/v2/rerank"

    def request_body(self, query: str, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.params.model, "query": query, "documents": texts, "top_n": len(texts)}
        if self.params.max_tokens_per_doc is not None:
            body["max_tokens_per_doc"] = self.params.max_tokens_per_doc
        return body

    def scores_from(self, answer: Any, count: int) -> list[float]:
        return results_scores(answer, count)
