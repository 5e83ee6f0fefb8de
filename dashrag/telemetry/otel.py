"""Spans from trace trees: one span per node, nested as the tree, named after the component.

Why derived from the tree rather than instrumented per component: every component already
records its node (parameters, elapsed time, output), so one converter covers them all and
a component written tomorrow is exported with no telemetry code of its own.

Attributes follow the OpenInference semantic conventions, so tracing UIs that read them
(Phoenix, Arize, Langfuse...) show retriever, reranker and LLM spans as such:

* every node: ``openinference.span.kind`` (RETRIEVER for keyword and semantic leaves, RERANKER for
  the rerank category, CHAIN for composites), ``input.value`` (the query), ``output.value`` (its
  ranking as JSON: document id, chunk id, score of the first 10), ``dashrag.params`` (the node's
  parameters as JSON, cut at 2000 characters), ``dashrag.top_k``, ``dashrag.results``;
* retrievers and composites (a fusion's final ranking): ``retrieval.documents.{i}.document.{id,score,metadata}``
  for the first 10 results;
* rerankers: ``reranker.query``, ``reranker.top_k``, ``reranker.input_documents`` (the first child's
  output) and ``reranker.output_documents``;
* each LLM call of a node (an agentic reranker's attempts): a child span named after the LLM component,
  kind LLM, with ``llm.model_name``, ``llm.token_count.{prompt,completion,total}`` and ``llm.cost.total``.

Every attribute passes through OpenInference's own :class:`~openinference.instrumentation.TraceConfig`
(read from the environment when the exporter is installed), so ``OPENINFERENCE_HIDE_INPUTS``,
``OPENINFERENCE_HIDE_OUTPUTS`` and ``OPENINFERENCE_HIDE_RETRIEVAL_DOCUMENTS`` mean here what they mean
in every OpenInference instrumentation. No document text or document metadata is ever exported
(trace nodes keep ids and scores only), nor a secret (params hold a credential's variable name).

A node's start is the wall-clock time its ``retrieve`` began (core/observe.py); where none was noted
(the nodes of a batch), children are laid one after another from their parent's start.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from openinference.instrumentation import TraceConfig
from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    RerankerAttributes,
    SpanAttributes,
)
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue

from dashrag.core import observe
from dashrag.core.observe import QueryRecord
from dashrag.core.registry import get_component

logger = logging.getLogger(__name__)

KINDS = {"rerank": OpenInferenceSpanKindValues.RERANKER, "keyword": OpenInferenceSpanKindValues.RETRIEVER,
         "semantic": OpenInferenceSpanKindValues.RETRIEVER}
LISTED = 10  # documents listed per span
PARAMS_CHARS = 2000

_tracer: trace.Tracer | None = None
_config = TraceConfig()  # the OPENINFERENCE_HIDE_* switches, read again by install()
_deferred: ContextVar[list[QueryRecord] | None] = ContextVar("dashrag_deferred_queries", default=None)


def exporter_from_environment() -> SpanExporter:
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()  # endpoint, headers, timeout: the OTEL_EXPORTER_OTLP_* variables


def install(exporter: SpanExporter | None = None) -> TracerProvider:
    """A provider of its own (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) with a batching exporter,
    flushed at exit; the query observer set to :func:`export`."""
    global _tracer, _config
    _config = TraceConfig()
    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME",
                                                                                       "dashrag")}))
    provider.add_span_processor(BatchSpanProcessor(exporter or exporter_from_environment()))
    _tracer = provider.get_tracer("dashrag")
    observe.set_observer(export)
    return provider


def active() -> bool:
    return _tracer is not None and observe.observer is not None


def export(record: QueryRecord, parent: otel_context.Context | None = None) -> None:
    """The spans of one query, under ``parent`` (default: the current span, such as a request's)."""
    deferred = _deferred.get()
    if deferred is not None and parent is None:
        deferred.append(record)
        return
    try:
        _node_span(record.node, record.start_ns, record.end_ns, parent, record, record.top_k)
    except Exception:  # an exporter's problem must never fail a query
        logger.warning("could not export the spans of a query", exc_info=True)


def _node_span(node: Mapping[str, Any], start: int, end: int | None, parent: otel_context.Context | None,
               record: QueryRecord, top_k: int | None = None) -> int:
    assert _tracer is not None
    start = record.starts.get(id(node), start)
    end = end if end is not None else start + int(float(node.get("elapsed_ms", 0.0)) * 1e6)
    span = _tracer.start_span(str(node["component"]), context=parent, start_time=start,
                              attributes=masked(_attributes(node, top_k)))
    inside = trace.set_span_in_context(span)
    cursor = start
    for child in node.get("children", ()):
        cursor = _node_span(child, cursor, None, inside, record)
    selection = node.get("selection")
    for call in selection.get("attempts", ()) if isinstance(selection, Mapping) else ():
        cursor = _llm_span(node, call, cursor, inside)
    span.end(end_time=end)
    return end


def masked(attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    """The attributes as the OPENINFERENCE_HIDE_* switches allow them (redacted, or left out)."""
    kept = {key: _config.mask(key, value) for key, value in attributes.items()}
    return {key: value for key, value in kept.items() if value is not None}


def _kind(component: str) -> OpenInferenceSpanKindValues:
    try:
        category = get_component(component).META.category
    except Exception:  # a pipeline step of the service, not a component
        return OpenInferenceSpanKindValues.CHAIN
    return KINDS.get(category or "", OpenInferenceSpanKindValues.CHAIN)


def _attributes(node: Mapping[str, Any], requested_top_k: int | None) -> dict[str, Any]:
    params = node.get("params") or {}
    output = node.get("output") or []
    kind = _kind(str(node["component"]))
    top_k = requested_top_k if requested_top_k is not None else params.get("top_k")
    attributes: dict[str, Any] = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: kind.value,
        **_input(str(node.get("query", ""))), **_output(output),
        "dashrag.component": str(node["component"]),
        "dashrag.params": json.dumps(params, default=str)[:PARAMS_CHARS],
        "dashrag.results": len(output),
        "dashrag.elapsed_ms": float(node.get("elapsed_ms", 0.0)),
    }
    if isinstance(top_k, int):
        attributes["dashrag.top_k"] = top_k
    if kind is not OpenInferenceSpanKindValues.RERANKER:
        attributes.update(_documents(SpanAttributes.RETRIEVAL_DOCUMENTS, output))
    else:
        attributes[RerankerAttributes.RERANKER_QUERY] = str(node.get("query", ""))
        if isinstance(top_k, int):
            attributes[RerankerAttributes.RERANKER_TOP_K] = top_k
        children = node.get("children") or []
        if children:
            attributes.update(_documents(RerankerAttributes.RERANKER_INPUT_DOCUMENTS, children[0].get("output") or []))
        attributes.update(_documents(RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, output))
    return attributes


def _input(query: str) -> dict[str, Any]:
    return {SpanAttributes.INPUT_VALUE: query, SpanAttributes.INPUT_MIME_TYPE: "text/plain"}


def _output(ranking: list[Mapping[str, Any]]) -> dict[str, Any]:
    """``output.value``: the first results' ids and scores as JSON (never their text or metadata)."""
    listed = [{k: hit[k] for k in ("document_id", "chunk_id", "source_id", "collection_name", "score",
                                   "retrieval_score", "rerank_score") if k in hit} for hit in ranking[:LISTED]]
    return {SpanAttributes.OUTPUT_VALUE: json.dumps(listed, default=str),
            SpanAttributes.OUTPUT_MIME_TYPE: "application/json"}


def _documents(prefix: str, output: list[Mapping[str, Any]]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i, hit in enumerate(output[:LISTED]):
        key = f"{prefix}.{i}."
        attributes[key + DocumentAttributes.DOCUMENT_ID] = str(hit.get("document_id", hit.get("chunk_id")))
        if isinstance(hit.get("score"), (int, float)):
            attributes[key + DocumentAttributes.DOCUMENT_SCORE] = float(hit["score"])
        attributes[key + DocumentAttributes.DOCUMENT_METADATA] = json.dumps(
            {k: hit[k] for k in ("chunk_id", "position") if k in hit})
    return attributes


def _llm_span(node: Mapping[str, Any], call: Mapping[str, Any], start: int, parent: otel_context.Context) -> int:
    assert _tracer is not None
    llm = node["selection"].get("llm") or {}
    end = start + int(float(call.get("latency_ms", 0.0)) * 1e6)
    usage = call.get("usage") or {}
    attributes: dict[str, Any] = {SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.LLM.value,
                                  **_input(str(node.get("query", "")))}
    if llm.get("model"):
        attributes[SpanAttributes.LLM_MODEL_NAME] = str(llm["model"])
    for name, attribute in (("prompt_tokens", SpanAttributes.LLM_TOKEN_COUNT_PROMPT),
                            ("completion_tokens", SpanAttributes.LLM_TOKEN_COUNT_COMPLETION),
                            ("total_tokens", SpanAttributes.LLM_TOKEN_COUNT_TOTAL)):
        if isinstance(usage.get(name), int):
            attributes[attribute] = usage[name]
    if isinstance(call.get("cost"), (int, float)):
        attributes[SpanAttributes.LLM_COST_TOTAL] = float(call["cost"])
    span = _tracer.start_span(str(llm.get("component", "LLM")), context=parent, start_time=start,
                              attributes=masked(attributes))
    span.end(end_time=end)
    return end


def caller_context(headers: Mapping[str, str]) -> otel_context.Context:
    """The caller's trace from its W3C ``traceparent`` (the propagators of OTEL_PROPAGATORS; none: a new trace)."""
    return propagate.extract(headers)


@contextmanager
def joined(headers: Mapping[str, str]) -> Iterator[None]:
    """Queries made inside export their spans into the caller's trace (``/mcp``, whose tools run inside)."""
    token = otel_context.attach(caller_context(headers))
    try:
        yield
    finally:
        otel_context.detach(token)


class RequestNotes:
    """What a request tells its span once answered: the pipeline's step times, its ranking, more attributes."""

    def __init__(self) -> None:
        self.step_ms: dict[str, float] = {}
        self.attributes: dict[str, Any] = {}

    def answered(self, step_ms: Mapping[str, float], ranking: list[Mapping[str, Any]],
                 attributes: Mapping[str, Any]) -> None:
        self.step_ms.update(step_ms)
        self.attributes.update({**_output(ranking), "dashrag.results": len(ranking), **attributes})


@contextmanager
def request_span(name: str, headers: Mapping[str, str], query: str,
                 attributes: Mapping[str, Any]) -> Iterator[RequestNotes]:
    """A service request as a span in the caller's trace (its ``traceparent``), the parent of the pipeline's
    steps (in their order, one after another), the tree queries made meanwhile under ``search``."""
    assert _tracer is not None
    started = time.time_ns()
    span = _tracer.start_span(name, context=caller_context(headers), start_time=started, attributes=masked({
        SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.CHAIN.value, **_input(query),
        **attributes}))
    queries: list[QueryRecord] = []
    token = _deferred.set(queries)
    notes = RequestNotes()
    try:
        yield notes
    except Exception as exc:
        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        raise
    finally:
        _deferred.reset(token)
        span.set_attributes(masked(notes.attributes))
        inside = trace.set_span_in_context(span)
        cursor = started
        for step, ms in notes.step_ms.items():
            if step == "total":
                continue
            end = cursor + int(ms * 1e6)
            step_span = _tracer.start_span(step, context=inside, start_time=cursor, attributes={
                SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.CHAIN.value})
            if step == "search":
                for record in queries:
                    export(record, trace.set_span_in_context(step_span))
            step_span.end(end_time=max(end, *(r.end_ns for r in queries)) if step == "search" and queries else end)
            cursor = end
        if "search" not in notes.step_ms:
            for record in queries:
                export(record, inside)
        span.end()
