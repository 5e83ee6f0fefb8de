"""JinaReranker: relevance scores from Jina AI's Reranker API (``POST {api_base}/v1/rerank``), or any server that
speaks it.

The protocol (jina.ai/reranker): the request is ``{"model", "query", "documents": [text, ...], "top_n",
"return_documents": false}`` with the key as ``Authorization: Bearer``; the answer is
``{"model", "usage", "results": [{"index", "relevance_score", "document"?}, ...]}``, best first.
As for Cohere's protocol (:mod:`dashrag.retrievers.cohere_reranker`, whose answer reader this
shares), ``top_n`` is the number of texts sent, every text must come back with a finite score,
and the documents are not echoed back (``return_documents`` false: they are the caller's already).

Everything else (the two roles, batches, bounded concurrency, the key by reference,
``JINA_API_KEY`` by default and required unless ``api_key_required`` is false, no redirect
followed) is every HTTP reranker's (:mod:`dashrag.retrievers.remote_reranker`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from dashrag.core.params import ComponentSpec, ParamKind, component_field, kind_field, spec
from dashrag.core.registry import register
from dashrag.retrievers.cohere_reranker import results_scores
from dashrag.retrievers.remote_reranker import RemoteReranker, RemoteRerankerParams


class JinaRerankerParams(RemoteRerankerParams):
    api_base: str = kind_field(ParamKind.ENDPOINT, "https://api.jina.ai", pattern=r"^https?://\S+$",
                               description="Base URL of the service; requests go to {api_base}/v1/rerank.")
    credential: ComponentSpec = component_field(
        "credential", spec("EnvCredential", var="JINA_API_KEY"),
        description="Where the API key comes from (EnvCredential: an environment variable's name); sent as a bearer "
        "token. The key itself is never stored.")
    api_key_required: bool = Field(True, description=(
        "Refuse to send a request when the credential's variable is unset (Jina's own service needs a key; a "
        "compatible server on your network may not)."))
    model: str = Field("jina-reranker-v2-base-multilingual", min_length=1, max_length=200,
                       description="The reranker model the service runs.")


@register(
    kind="retriever",
    icon="Globe",
    category="rerank",
    en=("Jina reranker", "Re-scores candidates with Jina AI's Reranker API, or a server that speaks it."),
    es=("Reordenador Jina", "Vuelve a puntuar candidatos con la API Reranker de Jina AI o un servidor compatible."),
    representation={
        "en": "Jina rerank {model} top {top_k} of {fetch_k}",
        "es": "Reordenación Jina {model}: {top_k} mejores de {fetch_k}",
    },
    operation="Sends the child's fetch_k candidates to {api_base}/v1/rerank in batches and keeps the top_k.",
)
class JinaReranker(RemoteReranker[JinaRerankerParams]):
    PATH = "/v1/rerank"

    def request_body(self, query: str, texts: list[str]) -> dict[str, Any]:
        return {"model": self.params.model, "query": query, "documents": texts, "top_n": len(texts),
                "return_documents": False}

    def scores_from(self, answer: Any, count: int) -> list[float]:
        return results_scores(answer, count)
