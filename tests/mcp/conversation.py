"""One scripted conversation with a dashrag MCP server through the official SDK's client.

The same calls are made over stdio (the real ``dashrag mcp`` command) and over streamable HTTP
(the real ``dashrag serve`` on loopback); each test then checks one answer of it.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.client.session import ClientSession

QUERY = "how does BM25 saturate term frequency"

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "list_trees": ("list_trees", {}),
    "retrieve": ("retrieve", {"query": QUERY, "tree": "kw", "top_k": 3}),
    "retrieve_scifact": ("retrieve", {"query": "vitamin D deficiency and bone density", "tree": "scifact",
                                      "top_k": 5}),
    "explain": ("explain", {"query": QUERY, "tree": "kw", "top_k": 2}),
    "no_tree": ("retrieve", {"query": QUERY, "tree": "nope"}),
    "blank_query": ("retrieve", {"query": "   ", "tree": "kw"}),
    "zero_top_k": ("retrieve", {"query": QUERY, "tree": "kw", "top_k": 0}),
    "no_document": ("get_document", {"tree": "kw", "document_id": "missing.md"}),
    "no_chunk": ("get_chunk", {"tree": "kw", "chunk_id": 10**9}),
    "filtered_out": ("retrieve", {"query": QUERY, "tree": "kw", "filters": {"lang": {"$exists": True}}}),
    "bad_filter": ("retrieve", {"query": QUERY, "tree": "kw", "filters": {"lang": {"$gtee": 1}}}),
    "by_section": ("retrieve", {"query": "keyword and dense rankings", "tree": "kw",
                                "filters": {"section": "Hybrid search and rank fusion"}}),
    "files": ("retrieve", {"query": "zebrafish sampled", "tree": "files", "top_k": 10}),
    "pdf_pages": ("retrieve", {"query": "zebrafish sampled", "tree": "files", "top_k": 10,
                               "filters": {"$and": [{"file_type": "pdf"}, {"page": {"$lte": 3}}]}}),
}


async def converse(session: ClientSession) -> dict[str, Any]:
    """Every call's answer by name: ``{"error": text}`` for a tool error, else the structured result."""
    await session.initialize()
    answers: dict[str, Any] = {"tools": {t.name: t for t in (await session.list_tools()).tools}}
    for key, (tool, arguments) in CALLS.items():
        answers[key] = await call(session, tool, arguments)
    first = answers["retrieve"]["results"][0]
    answers["get_chunk"] = await call(session, "get_chunk", {"tree": "kw", "chunk_id": first["chunk_id"]})
    answers["get_document"] = await call(session, "get_document", {"tree": "kw", "document_id": first["document_id"]})
    answers["after_errors"] = await call(session, "list_trees", {})
    return answers


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        return {"error": text}
    assert result.structured_content == json.loads(text)  # the text block and the structured one agree
    return result.structured_content
