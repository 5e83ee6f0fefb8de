"""The MCP server through the official SDK's client: the real ``dashrag mcp`` (stdio) and ``/mcp`` of a real
service on loopback (streamable HTTP). Each transport holds one scripted conversation (conversation.py);
each test checks one of its answers, on both transports."""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.mcp.conversation import QUERY, converse
from tests.service.conftest import LoopbackServer

TOOLS = {"retrieve", "explain", "list_trees", "get_chunk", "get_document"}
TOKEN_VAR = "DASHRAG_MCP_TEST_TOKEN"


async def over_stdio(trees: str) -> dict[str, Any]:
    command = StdioServerParameters(command=sys.executable, args=["-m", "dashrag.cli.main", "mcp", "--trees", trees],
                                    env=dict(os.environ))
    async with stdio_client(command) as (read, write), ClientSession(read, write) as session:
        return await converse(session)


async def over_http(url: str, headers: dict[str, str]) -> dict[str, Any]:
    async with httpx2.AsyncClient(headers=headers, timeout=60) as client, \
            streamable_http_client(f"{url}/mcp", http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        return await converse(session)


@pytest.fixture(scope="module", params=["stdio", "http"])
def answers(request, mcp_trees) -> dict[str, Any]:
    if request.param == "stdio":
        return anyio.run(over_stdio, str(mcp_trees))
    os.environ[TOKEN_VAR] = "s3cret-mcp"
    try:
        with LoopbackServer(create_app(ServiceSettings(trees_dir=mcp_trees, auth_token_var=TOKEN_VAR))) as server:
            return anyio.run(over_http, server.url, {"Authorization": "Bearer s3cret-mcp"})
    finally:
        del os.environ[TOKEN_VAR]


def test_tools_are_listed_with_descriptions_and_schemas(answers):
    tools = answers["tools"]
    assert set(tools) == TOOLS
    assert all(len(tool.description) > 60 for tool in tools.values())
    schema = tools["retrieve"].input_schema
    assert schema["required"] == ["query", "tree"]
    assert all(schema["properties"][name].get("description") for name in ("query", "tree", "top_k", "filters"))
    assert all(tool.annotations.read_only_hint for tool in tools.values())


def test_list_trees_names_each_tree(answers):
    trees = {t["name"]: t for t in answers["list_trees"]["trees"]}
    assert set(trees) == {"kw", "scifact", "files"}
    assert trees["kw"]["root_component"] == "BM25Retriever"
    assert trees["scifact"]["documents"] == 400 and trees["scifact"]["chunks"] == 400


def test_retrieve_ranks_the_right_document_first(answers):
    results = answers["retrieve"]["results"]
    assert 2 <= len(results) <= 3 and [r["rank"] for r in results] == list(range(1, len(results) + 1))
    assert results[0]["document_id"] == "bm25.md" and "saturat" in results[0]["text"]
    assert all(a["score"] >= b["score"] for a, b in zip(results, results[1:]))


def test_retrieve_reads_the_tree_it_names(answers):
    results = answers["retrieve_scifact"]["results"]
    assert len(results) == 5 and all(r["document_id"].isdigit() for r in results)


def test_explain_returns_the_trace_tree(answers):
    explained = answers["explain"]
    assert explained["trace"]["component"] == "BM25Retriever" and explained["trace"]["query"] == QUERY
    assert [r["chunk_id"] for r in explained["results"]] == [r["chunk_id"] for r in answers["retrieve"]["results"][:2]]


def test_get_chunk_and_get_document_return_the_hit(answers):
    first = answers["retrieve"]["results"][0]
    assert answers["get_chunk"]["text"] == first["text"]
    document = answers["get_document"]
    assert document["document_id"] == first["document_id"]
    assert first["text"] in [c["text"] for c in document["chunks"]]


def test_retrieve_shows_and_filters_the_file_and_section_of_each_hit(answers):
    first = answers["retrieve"]["results"][0]["metadata"]
    assert (first["path"], first["section"]) == ("bm25.md", "BM25")
    assert [(h["metadata"]["path"], h["metadata"]["section"]) for h in answers["by_section"]["results"]] == [
        ("hybrid_search.md", "Hybrid search and rank fusion")]


def test_hits_of_files_carry_their_path_page_and_section_and_filter_by_file_type_and_page(answers):
    def where(hit):
        return hit["metadata"]["path"], hit["metadata"].get("page"), hit["metadata"].get("section")

    places = [where(h) for h in answers["files"]["results"]]
    assert places[:2] == [("report.pdf", 3, None), ("notes.docx", None, "Methods › Sampling")]
    assert ("report.pdf", 4, None) in places  # what the filter below leaves out
    assert [where(h) for h in answers["pdf_pages"]["results"]] == [("report.pdf", 3, None)]


def test_retrieve_applies_the_metadata_filter(answers):
    assert answers["filtered_out"]["results"] == []  # no document of the example corpus has a lang field


def test_a_filter_on_a_field_no_document_has_says_so_in_warnings(answers):
    assert answers["filtered_out"]["warnings"] == [
        "the filter's field 'lang' ($.lang.$exists) is in no document, so it matches nothing; "
        "the fields are: file_type, modified, path, section, sha256, title"]  # what every file of a folder gives
    assert answers["retrieve"]["warnings"] == []


def test_a_malformed_filter_is_a_tool_error_naming_its_path(answers):
    assert "$.lang.$gtee" in answers["bad_filter"]["error"]


def test_bad_calls_are_tool_errors_that_say_what(answers):
    assert "no tree named 'nope'" in answers["no_tree"]["error"] and "kw" in answers["no_tree"]["error"]
    assert "query is empty" in answers["blank_query"]["error"]
    assert "top_k" in answers["zero_top_k"]["error"]
    assert "no document 'missing.md'" in answers["no_document"]["error"]
    assert f"no chunk {10**9}" in answers["no_chunk"]["error"]
    assert answers["after_errors"]["trees"]  # the server answered on after every error


def test_http_mcp_asks_for_the_services_token(mcp_trees, monkeypatch):
    monkeypatch.setenv(TOKEN_VAR, "s3cret-mcp")
    with LoopbackServer(create_app(ServiceSettings(trees_dir=mcp_trees, auth_token_var=TOKEN_VAR))) as server:
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "test", "version": "1"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        refused = httpx.post(f"{server.url}/mcp", json=initialize, headers=accept)
        wrong = httpx.post(f"{server.url}/mcp", json=initialize, headers={**accept, "Authorization": "Bearer no"})
        allowed = httpx.post(f"{server.url}/mcp", json=initialize,
                             headers={**accept, "Authorization": "Bearer s3cret-mcp"})
    assert refused.status_code == wrong.status_code == 401
    assert refused.json() == {"detail": "auth: missing or wrong bearer token"}
    assert allowed.status_code == 200 and allowed.json()["result"]["serverInfo"]["name"] == "dashrag"
