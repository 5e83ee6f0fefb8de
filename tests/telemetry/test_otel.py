"""Spans of real queries, exported over OTLP/HTTP to a loopback receiver that decodes the protobuf:
from the library, the CLI, the service and the MCP server, each a real process started with the
standard variables set; and nothing of OpenTelemetry imported when they are not."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import dashrag
from tests.conftest import EXAMPLE_CORPUS
from tests.telemetry.otlp_receiver import OtlpReceiver
from tests.web.conftest import serving

QUERY = "how does BM25 saturate term frequency"
FUSED = {"component": "ParallelRetriever", "params": {"merge_strategy": "rrf", "children": [
    {"component": "BM25Retriever", "params": {"top_k": 5}},
    {"component": "TFIDFRetriever", "params": {"top_k": 5}}]}}


@pytest.fixture(scope="module")
def fused_trees(tmp_path_factory) -> Path:
    trees = tmp_path_factory.mktemp("otel-trees")
    dashrag.build(FUSED, EXAMPLE_CORPUS, tmp_path_factory.mktemp("otel-work")).save(trees / "fused")
    return trees


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as r:
        yield r


@dataclass
class TracedServer:
    """One ``dashrag serve`` with the OTLP variables set and its receiver, for the tests whose server settings are the
    same (a start is about 4 s of CPU). Each test's requests carry a trace of their own (:meth:`new_trace`); its spans
    are the ones of that trace, and a span in any trace this module did not start is one that failed to join its
    caller's trace (:meth:`spans_of`)."""

    url: str
    receiver: OtlpReceiver
    traces: list[str] = field(default_factory=list)

    def new_trace(self) -> tuple[str, str, dict[str, str]]:
        """A new caller's trace id, span id and ``traceparent`` header (W3C Trace Context, as a caller sends it)."""
        trace, span = secrets.token_hex(16), secrets.token_hex(8)
        self.traces.append(trace)
        return trace, span, {"traceparent": f"00-{trace}-{span}-01"}

    def spans_of(self, trace: str, count: int, since: int) -> list[dict[str, Any]]:
        """The spans of ``trace`` once ``count`` have come (and a moment more for any extra); fails on a span received
        since index ``since`` that belongs to no trace started here."""
        self.receiver.wait_for(count, trace)
        received = self.receiver.spans[since:]
        strays = [s for s in received if s["trace_id"] not in self.traces]
        assert strays == [], strays
        return [s for s in received if s["trace_id"] == trace]


@pytest.fixture(scope="module")
def traced_server(fused_trees) -> Iterator[TracedServer]:
    with OtlpReceiver() as receiver, serving(fused_trees, env=otel_env(receiver)) as url:
        yield TracedServer(url, receiver)


def otel_env(receiver: OtlpReceiver) -> dict[str, str]:
    return {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_SERVICE_NAME": "dashrag-test", "OTEL_BSP_SCHEDULE_DELAY": "100"}


def by_name(spans: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in spans}


def assert_fused_tree(spans: dict[str, dict[str, Any]], parent_id: str | None) -> None:
    root, bm25, tfidf = spans["ParallelRetriever"], spans["BM25Retriever"], spans["TFIDFRetriever"]
    assert root["parent_id"] == parent_id
    assert bm25["parent_id"] == tfidf["parent_id"] == root["span_id"]
    assert root["start"] <= bm25["start"] <= bm25["end"] <= root["end"]
    assert root["attributes"]["openinference.span.kind"] == "CHAIN"
    assert bm25["attributes"]["openinference.span.kind"] == "RETRIEVER"
    assert bm25["attributes"]["input.value"] == QUERY
    fused = json.loads(root["attributes"]["output.value"])  # the fusion's final ranking, by ids and scores
    assert fused[0]["document_id"] == root["attributes"]["retrieval.documents.0.document.id"] == "bm25.md"
    assert len(fused) == root["attributes"]["dashrag.results"] and isinstance(fused[0]["score"], float)
    assert json.loads(bm25["attributes"]["output.value"])[0]["document_id"] == "bm25.md"
    assert bm25["attributes"]["dashrag.top_k"] == 5 and bm25["attributes"]["dashrag.results"] >= 1
    assert bm25["attributes"]["retrieval.documents.0.document.id"] == "bm25.md"
    assert json.loads(bm25["attributes"]["dashrag.params"])["k1"] == 1.5
    assert root["service"] == "dashrag-test"


def test_a_library_query_exports_one_span_per_node_nested_like_the_trace(receiver, fused_trees):
    script = (f"import dashrag; r = dashrag.load({str(fused_trees / 'fused')!r}); "
              f"chunks, node = r.retrieve({QUERY!r}, top_k=3); print(len(node['children']))")
    subprocess.run([sys.executable, "-c", script], env=otel_env(receiver), check=True, timeout=120)
    spans = receiver.wait_for(3)
    assert len(spans) == 3  # one per node: nothing twice, children were not reported on their own
    assert_fused_tree(by_name(spans), parent_id=None)
    assert by_name(spans)["ParallelRetriever"]["attributes"]["dashrag.top_k"] == 3


@pytest.mark.slow
def test_a_cli_batch_exports_each_query(receiver, fused_trees, tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"_id": str(i), "text": q}) + "\n"
                               for i, q in enumerate([QUERY, "word pieces and tokenization"])))
    subprocess.run([sys.executable, "-m", "dashrag.cli.main", "query", str(fused_trees / "fused"), "--queries",
                    str(queries), "--format", "trec"], env=otel_env(receiver), check=True, timeout=120,
                   capture_output=True)
    spans = receiver.wait_for(6)
    roots = [s for s in spans if s["name"] == "ParallelRetriever"]
    assert len(spans) == 6 and len(roots) == 2 and len({r["trace_id"] for r in roots}) == 2
    assert sorted(r["attributes"]["input.value"] for r in roots) == sorted([QUERY, "word pieces and tokenization"])


@pytest.mark.slow
def test_a_service_request_is_the_parent_of_its_steps_and_the_tree(traced_server):
    caller_trace, caller_span, traceparent = traced_server.new_trace()
    since = len(traced_server.receiver.spans)
    answer = httpx.post(f"{traced_server.url}/retrieve", json={"query": QUERY, "collection_name": "fused"},
                        headers=traceparent)
    assert answer.status_code == 200
    spans = traced_server.spans_of(caller_trace, 3 + 1 + 7, since)  # none received in a trace of its own
    named = by_name(spans)
    assert "POST /retrieve" in named, [s["name"] for s in spans]
    request = named["POST /retrieve"]
    assert request["trace_id"] == caller_trace and request["parent_id"] == caller_span  # joined the caller's trace
    assert request["attributes"]["input.value"] == QUERY and request["attributes"]["dashrag.collection"] == "fused"
    ranking = json.loads(request["attributes"]["output.value"])
    assert [hit["chunk_id"] for hit in ranking] == [c["chunk_id"] for c in answer.json()["context_chunks"]][:10]
    assert request["attributes"]["dashrag.results"] == len(answer.json()["context_chunks"])
    steps = [s for s in spans if s["parent_id"] == request["span_id"]]
    assert [s["name"] for s in sorted(steps, key=lambda s: s["start"])] == [
        "rewrite", "complexity", "search", "retrieval_floor", "rerank", "confidence", "assemble"]
    assert_fused_tree(named, parent_id=named["search"]["span_id"])
    assert {s["trace_id"] for s in spans} == {caller_trace}


@pytest.mark.slow
def test_the_openinference_switches_hide_the_query_and_the_ranking(receiver, fused_trees):
    hidden = {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"}
    with serving(fused_trees, env={**otel_env(receiver), **hidden}) as url:
        answer = httpx.post(f"{url}/retrieve", json={"query": QUERY, "collection_name": "fused"})
        assert answer.status_code == 200
        spans = receiver.wait_for(3 + 1 + 7)
    named = by_name(spans)
    for span in (named["POST /retrieve"], named["ParallelRetriever"], named["BM25Retriever"]):
        assert span["attributes"]["input.value"] == span["attributes"]["output.value"] == "__REDACTED__"
    assert named["BM25Retriever"]["attributes"]["retrieval.documents.0.document.metadata"] == "__REDACTED__"
    values = json.dumps([s["attributes"] for s in spans])
    assert "saturate" not in values and "chunk_id" not in values  # nor the query, nor a ranking, anywhere


@pytest.mark.slow
def test_no_span_carries_document_text_or_metadata(traced_server):
    trace, _, traceparent = traced_server.new_trace()
    since = len(traced_server.receiver.spans)
    answer = httpx.post(f"{traced_server.url}/retrieve", json={"query": QUERY, "collection_name": "fused"},
                        headers=traceparent).json()
    spans = traced_server.spans_of(trace, 3 + 1 + 7, since)
    values = json.dumps([s["attributes"] for s in spans])
    top = answer["context_chunks"][0]
    assert len(top["text"]) > 40 and top["text"][:40] not in values
    assert "metadata" not in json.loads(by_name(spans)["POST /retrieve"]["attributes"]["output.value"])[0]


@pytest.mark.slow
def test_an_mcp_call_over_http_joins_the_callers_trace(traced_server):
    caller_trace, caller_span, traceparent = traced_server.new_trace()
    since = len(traced_server.receiver.spans)
    answers = anyio.run(over_http_fused, traced_server.url, traceparent)
    spans = traced_server.spans_of(caller_trace, 3, since)  # none received in a trace of its own
    assert answers["results"][0]["document_id"] == "bm25.md"
    named = by_name(spans)
    assert_fused_tree(named, parent_id=caller_span)
    assert named["ParallelRetriever"]["trace_id"] == caller_trace


async def over_http_fused(url: str, traceparent: dict[str, str]) -> dict[str, Any]:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=traceparent, timeout=60) as client, \
            streamable_http_client(f"{url}/mcp", http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("retrieve", {"query": QUERY, "tree": "fused", "top_k": 3})
        return result.structured_content


@pytest.mark.slow
def test_an_mcp_query_exports_the_tree(receiver, fused_trees, monkeypatch):
    for name, value in otel_env(receiver).items():
        monkeypatch.setenv(name, value)  # the stdio server inherits this process's environment
    answers = anyio.run(over_stdio_fused, str(fused_trees))
    assert answers["results"][0]["document_id"] == "bm25.md"
    assert_fused_tree(by_name(receiver.wait_for(3)), parent_id=None)


async def over_stdio_fused(trees: str) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = StdioServerParameters(command=sys.executable, args=["-m", "dashrag.cli.main", "mcp", "--trees", trees],
                                    env=dict(os.environ))
    async with stdio_client(command) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("retrieve", {"query": QUERY, "tree": "fused", "top_k": 3})
        return result.structured_content


@pytest.mark.slow
def test_without_the_variables_nothing_of_opentelemetry_is_imported(fused_trees):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    script = (f"import sys, dashrag; r = dashrag.load({str(fused_trees / 'fused')!r}); r.retrieve({QUERY!r}); "
              "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'openinference', "
              "'dashrag.telemetry.'))))")
    result = subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True)
    assert result.stdout.strip() == "[]"
