"""Real loopback servers speaking the hosted rerank services' protocols, for CohereReranker and JinaReranker.

Both extend :class:`RerankServer` (tests/retrievers/rerank_server.py: recording, delays, a replaceable
answer) with what their protocol says:

* Cohere's Rerank API v2: ``POST /v2/rerank`` ``{model, query, documents, top_n, max_tokens_per_doc?}``
  → ``{"id", "results": [{"index", "relevance_score"}], "meta"}``, the ``top_n`` best first;
* Jina's Reranker API: ``POST /v1/rerank`` ``{model, query, documents, top_n, return_documents}``
  → ``{"model", "usage", "results": [{"index", "relevance_score", "document"?}]}``, the ``top_n`` best first.

Like the hosted services, both answer 401 without a bearer token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .rerank_server import RerankServer


def best_first(server: RerankServer, body: dict) -> list[dict]:
    scored = [{"index": i, "relevance_score": server.score(body["query"], t)} for i, t in enumerate(body["documents"])]
    return sorted(scored, key=lambda e: -e["relevance_score"])[: body.get("top_n") or len(scored)]


@dataclass
class HostedServiceServer(RerankServer):
    """A hosted service's manners: a request without a bearer token is a 401 with the service's message."""

    TEXTS = "documents"
    UNAUTHORIZED = b"{}"

    def _respond(self, body: dict, headers: dict) -> tuple[int, bytes]:
        if self.answer is None and "Authorization" not in headers:
            return 401, self.UNAUTHORIZED
        return super()._respond(body, headers)


@dataclass
class CohereServer(HostedServiceServer):
    PATH = "/v2/rerank"
    UNAUTHORIZED = json.dumps({"message": "no api key supplied"}).encode()

    def ranking(self, body: dict) -> dict:
        return {"id": "rerank-1", "results": best_first(self, body),
                "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}}


@dataclass
class JinaServer(HostedServiceServer):
    PATH = "/v1/rerank"
    UNAUTHORIZED = json.dumps({"detail": "Unauthorized"}).encode()

    def ranking(self, body: dict) -> dict:
        results = best_first(self, body)
        if body.get("return_documents", True):
            results = [{**r, "document": {"text": body["documents"][r["index"]]}} for r in results]
        return {"model": body["model"], "usage": {"total_tokens": 10}, "results": results}


SERVERS = {"CohereReranker": CohereServer, "JinaReranker": JinaServer}
KEY_VARS = {"CohereReranker": "COHERE_API_KEY", "JinaReranker": "JINA_API_KEY"}


@dataclass
class ScoreServer(RerankServer):
    """The ``/score`` API the fragment service's reranker calls (vLLM's Score API): one text per request,
    ``{model?, text_1: query, text_2: text}`` → ``{"object": "list", "data": [{"index": 0, "object": "score",
    "score": s}]}``."""

    PATH = "/score"

    @property
    def queries(self) -> list[str]:
        return [r["body"]["text_1"] for r in self.requests]

    @property
    def texts(self) -> list[str]:
        return [r["body"]["text_2"] for r in self.requests]

    def ranking(self, body: dict) -> dict:
        score = self.score(body["text_1"], body["text_2"])
        return {"id": "score-1", "object": "list", "data": [{"index": 0, "object": "score", "score": score}]}
