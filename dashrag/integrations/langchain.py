"""A LangChain retriever over dashrag: ``DashragRetriever(source=SavedTree("trees/notes"), k=4)``.

Each hit is a ``Document``: the chunk's text, its document's metadata, plus ``document_id``, ``chunk_id``
and ``score`` (dashrag's keys win over a document's own keys of those names). ``k`` and ``filters`` set on
the retriever can be given per call too: ``retriever.invoke("query", k=3, filters={"year": 2024})``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from dashrag.integrations.sources import Filters, Hit, Source

__all__ = ["DashragRetriever"]


def document(hit: Hit) -> Document:
    return Document(page_content=hit.text, id=hit.chunk_id, metadata={
        **hit.metadata, "document_id": hit.document_id, "chunk_id": hit.chunk_id, "score": hit.score})


class DashragRetriever(BaseRetriever):
    """dashrag's hits as LangChain ``Document``\\s, sync and async; ``source``: a ``SavedTree`` or a
    ``ServiceCollection`` (:mod:`dashrag.integrations.sources`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    source: Source
    k: int = Field(4, ge=1, description="How many documents to return.")
    filters: dict[str, Any] | None = Field(None, description="A metadata filter (docs/filters.md).")

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, filters: Filters | None = None) -> list[Document]:
        hits = self.source.search(query, k or self.k, filters if filters is not None else self.filters)
        return [document(hit) for hit in hits]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, filters: Filters | None = None) -> list[Document]:
        hits = await self.source.asearch(query, k or self.k, filters if filters is not None else self.filters)
        return [document(hit) for hit in hits]
