"""What the MCP face and OpenTelemetry export add to a keyword query, as ratios to the plain library call.

The ``keyword`` preset on all of SciFact (whole documents), the 300 test queries, top_k 10, one
query at a time (as an agent asks), in these variants, interleaved pass by pass:

  library        ``retriever.retrieve(q, top_k=10)``, no observer (the baseline)
  no_hook        the same without the observer check (``Retriever._answer``): what the slot costs
                 when OpenTelemetry is off (the ratio library / no_hook, expected 1.00)
  otel           ``retrieve`` with the OTLP/HTTP exporter on (spans batched to a loopback receiver
                 that decodes them, tests/telemetry/otlp_receiver.py): one span per node built and queued
  mcp_stdio      the ``retrieve`` tool of the real ``dashrag mcp`` over stdio, through the SDK's client:
                 JSON-RPC, the tool's argument validation, result JSON, two pipes

Figures: per-query median over passes of each pass's mean (ms), and each variant's ratio to library.
Taken on a shared machine: the load average is printed with them.

Run from the repo root: PYTHONPATH=. .venv/bin/python bench/bench_mcp_otel_overhead.py [--passes 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

import dashrag
from dashrag.core import observe
from dashrag.core.ask import Ask
from dashrag.evaluation.beir import load_split
from tests.telemetry.otlp_receiver import OtlpReceiver

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
WHOLE = {"component": "WholeDocumentChunker", "params": {}}


def mean_ms(run: Callable[[str], Any], queries: list[str]) -> float:
    start = time.perf_counter()
    for q in queries:
        run(q)
    return (time.perf_counter() - start) * 1000 / len(queries)


async def mcp_pass(trees: Path, queries: list[str]) -> float:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = StdioServerParameters(command=sys.executable, args=["-m", "dashrag.cli.main", "mcp", "--trees",
                                                                  str(trees)], env=dict(os.environ))
    async with stdio_client(command) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("retrieve", {"query": queries[0], "tree": "scifact", "top_k": 10})  # warm
        start = time.perf_counter()
        for q in queries:
            result = await session.call_tool("retrieve", {"query": q, "tree": "scifact", "top_k": 10})
            assert not result.is_error, result.content
        return (time.perf_counter() - start) * 1000 / len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    queries = list(load_split(args.data, "test").queries.values())
    with tempfile.TemporaryDirectory() as tmp:
        trees = Path(tmp) / "trees"
        tree = dashrag.build("keyword", args.data / "corpus.jsonl.gz", Path(tmp) / "work", chunker=WHOLE)
        tree.save(trees / "scifact")
        retriever = dashrag.load(trees / "scifact")
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        from dashrag.telemetry.otel import install

        figures: dict[str, list[float]] = {"library": [], "no_hook": [], "otel": [], "mcp_stdio": []}
        with OtlpReceiver() as receiver:
            provider = install(OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces"))
            exporter_on = observe.observer
            for _ in range(args.passes):
                observe.set_observer(None)
                figures["library"].append(mean_ms(lambda q: retriever.retrieve(q, top_k=10), queries))
                figures["no_hook"].append(mean_ms(lambda q: retriever._answer(q, Ask(top_k=10)), queries))
                observe.set_observer(exporter_on)
                figures["otel"].append(mean_ms(lambda q: retriever.retrieve(q, top_k=10), queries))
                observe.set_observer(None)
                figures["mcp_stdio"].append(anyio.run(mcp_pass, trees, queries))
            provider.force_flush()
            provider.shutdown()
            spans = len(receiver.spans)
    median = {name: statistics.median(values) for name, values in figures.items()}
    report = {
        "queries": len(queries), "passes": args.passes, "ms_per_query": {k: round(v, 4) for k, v in median.items()},
        "ratio_to_library": {k: round(v / median["library"], 3) for k, v in median.items()},
        "library_over_no_hook": round(median["library"] / median["no_hook"], 3),
        "spans_received": spans, "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
