"""The MCP server: the tools of :mod:`dashrag.mcp.tools` with descriptions and input schemas for a model.

One :class:`MCPServer` (the official SDK) serves stdio (``dashrag mcp``) and streamable HTTP
(``/mcp`` inside ``dashrag serve``). A :class:`~dashrag.mcp.tools.ToolProblem` becomes the SDK's
``ToolError``: the call answers ``isError`` with the message, and the server goes on. Any other
exception is the SDK's "Error executing tool" (logged with its traceback, nothing leaked).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from dashrag.mcp import tools
from dashrag.service.collections import CollectionRegistry

INSTRUCTIONS = (
    "Search dashrag's saved retriever trees (indexes of document collections). Call list_trees first to learn "
    "the tree names, then retrieve with a natural-language query. Results are chunks of documents, best first, "
    "with a document_id and chunk_id; get_chunk and get_document fetch more text around a hit, explain shows "
    "how each component of the tree scored the query."
)

Query = Annotated[str, Field(min_length=1, description="What to search for, in natural language or keywords.")]
TreeName = Annotated[str, Field(description="The tree (collection): a name from list_trees.")]
TopK = Annotated[int | None, Field(ge=1, le=1000, description=(
    "How many chunks to return, best first (default: the tree's configured top_k)."))]
Filters = Annotated[dict[str, Any] | None, Field(description=(
    "Only chunks of documents whose metadata match, Mongo-style: {\"year\": {\"$gte\": 2015}, "
    "\"lang\": {\"$in\": [\"es\", \"de\"]}}; operators $eq $ne $in $nin $gt $gte $lt $lte $exists $and $or "
    "$not; a bare value means $eq (docs/filters.md). The ranking and scores are those of the unfiltered query."))]
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def _as_tool_errors(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    @wraps(fn)
    def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return fn(*args, **kwargs)
        except tools.ToolProblem as problem:
            raise ToolError(str(problem)) from None

    return call


def mcp_server(registry: CollectionRegistry) -> MCPServer:
    server = MCPServer("dashrag", instructions=INSTRUCTIONS, version="1")

    def retrieve(query: Query, tree: TreeName, top_k: TopK = None, filters: Filters = None) -> dict[str, Any]:
        return tools.retrieve(registry, query, tree, top_k, filters)

    def explain(query: Query, tree: TreeName, top_k: TopK = None, filters: Filters = None) -> dict[str, Any]:
        return tools.explain(registry, query, tree, top_k, filters)

    def list_trees() -> dict[str, Any]:
        return tools.list_trees(registry)

    def get_chunk(tree: TreeName, chunk_id: Annotated[int, Field(description=(
            "A chunk_id from retrieve's results."))]) -> dict[str, Any]:
        return tools.get_chunk(registry, tree, chunk_id)

    def get_document(tree: TreeName, document_id: Annotated[str, Field(min_length=1, description=(
            "A document_id from retrieve's results."))]) -> dict[str, Any]:
        return tools.get_document(registry, tree, document_id)

    descriptions: dict[Callable[..., dict[str, Any]], str] = {
        retrieve: "Search one tree for the chunks most relevant to a query. Returns results best first, each with "
                  "rank, document_id, chunk_id, position (the chunk's place in its document), score (higher is "
                  "better; comparable within one answer only) and text.",
        explain: "Run a query like retrieve and also return its trace: one node per component of the tree with "
                 "its parameters, elapsed time and the chunk ids and scores it produced. Use it to see why a "
                 "chunk ranked where it did.",
        list_trees: "List the trees that can be searched: name, root component, number of documents and chunks, "
                    "and when each was saved.",
        get_chunk: "Fetch one chunk of a tree by its chunk_id: its text, document_id, position and how many "
                   "chunks its document has (neighbours are the same document at position - 1 and + 1).",
        get_document: "Fetch a whole document of a tree by its document_id, as its chunks in order "
                      "(chunks may overlap by a few characters).",
    }
    for fn, description in descriptions.items():
        server.add_tool(_as_tool_errors(fn), name=fn.__name__, description=description, annotations=READ_ONLY)
    return server
