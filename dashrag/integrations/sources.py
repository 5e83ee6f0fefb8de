"""Where a framework retriever's hits come from: a saved tree on this machine, or a collection of a
running ``dashrag serve``. One answer shape (:class:`Hit`) for both, so the LangChain and LlamaIndex
adapters are a few lines each and cannot drift apart.

Why a source object rather than a retriever with a ``path`` *or* a ``url``: the two differ in every
step (load vs. HTTP, local errors vs. status codes, a thread vs. an async client), and a user picks
one once; each is a class that does its one thing.
"""

from __future__ import annotations

import asyncio
import os
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dashrag.errors import DashragError

Filters = dict[str, Any]  # the filter language's JSON (docs/filters.md)


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk: its text, its score (higher is better), where it comes from, its document's metadata."""

    text: str
    score: float | None
    document_id: str
    chunk_id: str
    metadata: dict[str, Any] = field(default_factory=dict)


class Source(ABC):
    @abstractmethod
    def search(self, query: str, k: int, filters: Filters | None) -> list[Hit]:
        """The best ``k`` hits for ``query`` among the documents ``filters`` allows (None: all)."""

    async def asearch(self, query: str, k: int, filters: Filters | None) -> list[Hit]:
        return await asyncio.to_thread(self.search, query, k, filters)


class SavedTree(Source):
    """A tree saved by ``dashrag index`` / ``dashrag.save``, loaded on first use and kept (loading is the
    slow part; a retriever answers queries from several threads)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._retriever: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SavedTree({str(self.path)!r})"

    def _loaded(self) -> Any:
        with self._lock:
            if self._retriever is None:
                from dashrag.api import load

                self._retriever = load(self.path)
            return self._retriever

    def search(self, query: str, k: int, filters: Filters | None) -> list[Hit]:
        chunks, _ = self._loaded().retrieve(query, top_k=k, filters=filters)
        return [Hit(text=c.chunk.text, score=float(c.score), document_id=c.chunk.document_id,
                    chunk_id=str(c.chunk.id), metadata=dict(c.chunk.all_metadata)) for c in chunks]


class ServiceCollection(Source):
    """A collection of ``dashrag serve`` at ``url``, asked through ``POST /retrieve`` (its pipeline: gates,
    reranking, calibrated scores; docs/service.md). ``token_var``: the name of the environment variable that
    holds the service's bearer token, read at each call (the token itself is never stored)."""

    def __init__(self, url: str, collection: str, token_var: str | None = None, timeout: float = 60.0):
        self.url, self.collection, self.token_var, self.timeout = url.rstrip("/"), collection, token_var, timeout

    def __repr__(self) -> str:
        return f"ServiceCollection({self.url!r}, {self.collection!r})"

    def _request(self, query: str, k: int, filters: Filters | None) -> dict[str, Any]:
        headers = {}
        if self.token_var:
            token = os.environ.get(self.token_var)
            if not token:
                raise DashragError(f"{self!r}: the token variable {self.token_var} is not set")
            headers["Authorization"] = f"Bearer {token}"
        body = {"query": query, "collection_name": self.collection, "limit": k, "filters": filters}
        return {"url": f"{self.url}/retrieve", "json": body, "headers": headers, "timeout": self.timeout}

    def _hits(self, response: Any) -> list[Hit]:
        if response.status_code != 200:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text[:200]
            raise DashragError(f"{self!r}: POST /retrieve answered {response.status_code}: {detail}")
        return [Hit(text=c["text"], score=c["rerank_score"] if c["rerank_score"] is not None else c["retrieval_score"],
                    document_id=c["source_id"] or "", chunk_id=c["chunk_id"], metadata=c.get("metadata") or {})
                for c in response.json()["context_chunks"]]

    def search(self, query: str, k: int, filters: Filters | None) -> list[Hit]:
        import httpx

        try:
            return self._hits(httpx.post(**self._request(query, k, filters)))
        except httpx.HTTPError as exc:
            raise DashragError(f"{self!r}: could not reach the service: {exc}") from None

    async def asearch(self, query: str, k: int, filters: Filters | None) -> list[Hit]:
        import httpx

        request = self._request(query, k, filters)
        try:
            async with httpx.AsyncClient(timeout=request.pop("timeout")) as client:
                return self._hits(await client.post(**request))
        except httpx.HTTPError as exc:
            raise DashragError(f"{self!r}: could not reach the service: {exc}") from None
