"""``POST /retrieve``: the reference contract.

The answer is serialised to JSON in the worker thread that ran the pipeline and returned
as a ready ``Response``. A sync endpoint returning a model makes FastAPI validate that
model again in a *second* worker-thread hand-off, then serialise it on the event loop;
the answer is already a validated :class:`RetrieveResponse`, so both were overhead on
every request (docs/service.md, "Overhead"). ``response_model`` still documents the body.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from dashrag import telemetry
from dashrag.service.json_body import StrictJSONRoute
from dashrag.service.models import RetrieveRequest, RetrieveResponse
from dashrag.service.routes import errors, invalid
from dashrag.service.state import service_of

router = APIRouter(route_class=StrictJSONRoute)

SERVER_TIMING = {"description": "Each pipeline step's wall time in ms, in the order the steps ran "
                                "(W3C Server Timing: `search;dur=8.312, ..., total;dur=8.9`).",
                 "schema": {"type": "string"}}


def server_timing(step_ms: dict[str, float]) -> str:
    return ", ".join(f"{step};dur={ms}" for step, ms in step_ms.items())


@router.post("/retrieve", response_model=RetrieveResponse, response_model_exclude_none=False,
             responses={200: {"headers": {"Server-Timing": SERVER_TIMING}}, **errors(401, 404, 413, 503),
                        **invalid("An empty or whitespace-only query, or any malformed body.")})
def retrieve(body: RetrieveRequest, request: Request) -> Response:
    """Fetch and rank grounding chunks from ``collection_name`` (and ``user_collection_name``); an empty
    context is a 200 with ``low_confidence: true``."""
    if telemetry.active():  # the request as the parent span of the pipeline's steps (docs/otel.md)
        with telemetry.request_span("POST /retrieve", request.headers, body.query, {
                "dashrag.collection": body.collection_name, "dashrag.top_k": body.limit,
                **({"dashrag.user_collection": body.user_collection_name} if body.user_collection_name else {}),
                "dashrag.filtered": body.filters is not None}) as span:
            result = service_of(request).pipeline.run(body)
            answer = result.response
            span.answered(result.step_ms, [chunk.model_dump(exclude={"text", "metadata"})
                                           for chunk in answer.context_chunks],
                          {"dashrag.low_confidence": answer.low_confidence, "dashrag.reranker": answer.reranker})
    else:
        result = service_of(request).pipeline.run(body)
    return Response(result.response.model_dump_json(), media_type="application/json",
                    headers={"Server-Timing": server_timing(result.step_ms)})
