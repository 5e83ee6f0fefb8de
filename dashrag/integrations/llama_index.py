"""A LlamaIndex retriever over dashrag: ``DashragRetriever(SavedTree("trees/notes"), similarity_top_k=4)``.

Each hit is a ``NodeWithScore``: a ``TextNode`` (the chunk's text, its id, its document's metadata plus
``document_id`` and ``chunk_id``; the document as the node's source) with dashrag's score.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

from dashrag.integrations.sources import Hit, Source

__all__ = ["DashragRetriever"]


def node_with_score(hit: Hit) -> NodeWithScore:
    node = TextNode(id_=hit.chunk_id, text=hit.text,
                    metadata={**hit.metadata, "document_id": hit.document_id, "chunk_id": hit.chunk_id},
                    relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.document_id)})
    return NodeWithScore(node=node, score=hit.score)


class DashragRetriever(BaseRetriever):
    """dashrag's hits as LlamaIndex ``NodeWithScore``\\s, sync and async; ``source``: a ``SavedTree`` or a
    ``ServiceCollection`` (:mod:`dashrag.integrations.sources`); ``filters``: a metadata filter (docs/filters.md)."""

    def __init__(self, source: Source, similarity_top_k: int = 4, filters: dict[str, Any] | None = None,
                 callback_manager: CallbackManager | None = None):
        if similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be at least 1, not {similarity_top_k}")
        self.source, self.similarity_top_k, self.filters = source, similarity_top_k, filters
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [node_with_score(hit) for hit in self.source.search(query_bundle.query_str, self.similarity_top_k,
                                                                   self.filters)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await self.source.asearch(query_bundle.query_str, self.similarity_top_k, self.filters)
        return [node_with_score(hit) for hit in hits]
