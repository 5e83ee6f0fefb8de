"""What each MCP tool does, as plain functions over the collections (no SDK here: tested and reused alike).

Every answer is JSON-ready. A problem the caller can fix (no such tree, document or chunk, an
empty query, a bad ``top_k``) is a :class:`ToolProblem` whose message says what and where; the
server turns it into an MCP tool error, so the model reads it and the server keeps running.
"""

from __future__ import annotations

from typing import Any

from dashrag.core.restriction import Restriction
from dashrag.documents.model import ScoredChunk
from dashrag.errors import DashragError, excerpt
from dashrag.service.collections import CollectionRegistry, TreeCollection


class ToolProblem(Exception):
    """A tool call the caller can correct; the message is shown to the model as the tool's error."""


def _tree(registry: CollectionRegistry, name: str) -> TreeCollection:
    tree = registry.tree(name)
    if tree is None:
        known = ", ".join(t.name for t in registry.trees()) or "none"
        raise ToolProblem(f"no tree named {excerpt(name)} (trees: {known})")
    return tree


def _hit(rank: int, scored: ScoredChunk) -> dict[str, Any]:
    return {"rank": rank, "document_id": scored.document_id, "chunk_id": scored.chunk.id,
            "position": scored.chunk.position, "score": scored.score, "text": scored.chunk.text,
            "metadata": dict(scored.chunk.all_metadata)}


def _answer(registry: CollectionRegistry, query: str, tree: str, top_k: int | None,
            filters: dict[str, Any] | None) -> dict[str, Any]:
    """The hits, each filter field no document has (``warnings``) and the trace, as ``retrieve`` and ``explain``
    answer them."""
    if top_k is not None and top_k < 1:
        raise ToolProblem(f"top_k must be a positive integer, got {top_k}")
    collection = _tree(registry, tree)
    try:
        chunks, trace = collection.retriever.retrieve(query, top_k=top_k, filters=filters)  # the trace records them
        warnings = collection.filter_warnings(None if filters is None else Restriction.where(filters))
    except DashragError as exc:
        raise ToolProblem(f"tree {excerpt(tree)}: {exc}") from None
    hits = list(chunks)[: top_k or len(chunks)]
    return {"tree": tree, "query": query, "results": [_hit(rank, c) for rank, c in enumerate(hits, 1)],
            "warnings": warnings, "trace": trace}


def retrieve(registry: CollectionRegistry, query: str, tree: str, top_k: int | None = None,
             filters: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = _answer(registry, query, tree, top_k, filters)
    del answer["trace"]
    return answer


def explain(registry: CollectionRegistry, query: str, tree: str, top_k: int | None = None,
            filters: dict[str, Any] | None = None) -> dict[str, Any]:
    return _answer(registry, query, tree, top_k, filters)


def list_trees(registry: CollectionRegistry) -> dict[str, Any]:
    trees = []
    for tree in registry.trees():
        chunks = tree.retriever.require_infra().chunks
        trees.append({"name": tree.name, "root_component": tree.manifest["config"]["component"],
                      "documents": len(chunks.document_ids), "chunks": len(chunks),
                      "saved_at": tree.manifest.get("saved_at")})
    return {"trees": trees}


def get_chunk(registry: CollectionRegistry, tree: str, chunk_id: int) -> dict[str, Any]:
    chunks = _tree(registry, tree).retriever.require_infra().chunks
    try:
        chunk = chunks.by_id(chunk_id)
    except DashragError:
        raise ToolProblem(f"tree {excerpt(tree)} has no chunk {chunk_id}") from None
    return {"tree": tree, "chunk_id": chunk.id, "document_id": chunk.document_id, "position": chunk.position,
            "chunks_in_document": chunks.document_size(chunk.document_id), "text": chunk.text,
            "categories": {k: list(v) for k, v in chunk.metadata.items()}}


def get_document(registry: CollectionRegistry, tree: str, document_id: str) -> dict[str, Any]:
    """The document as its chunks hold it, in order (overlapping chunks keep their overlap)."""
    chunks = _tree(registry, tree).retriever.require_infra().chunks
    size = chunks.document_size(document_id)
    if size == 0:
        raise ToolProblem(f"tree {excerpt(tree)} has no document {excerpt(document_id)}")
    parts = [c for c in chunks.at_positions([(document_id, p) for p in range(size)]) if c is not None]
    return {"tree": tree, "document_id": document_id, "categories": {k: list(v) for k, v in parts[0].metadata.items()},
            "chunks": [{"chunk_id": c.id, "position": c.position, "text": c.text} for c in parts]}

