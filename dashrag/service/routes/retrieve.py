"""``POST /retrieve``: the reference contract."""

from __future__ import annotations

from fastapi import APIRouter, Request

from dashrag.service.models import RetrieveRequest, RetrieveResponse
from dashrag.service.routes import errors, invalid
from dashrag.service.state import service_of

router = APIRouter()


@router.post("/retrieve", response_model=RetrieveResponse, response_model_exclude_none=False,
             responses={**errors(401, 404, 413, 503), **invalid(
                 "An empty or whitespace-only query, or any malformed body.")})
def retrieve(body: RetrieveRequest, request: Request) -> RetrieveResponse:
    """Fetch and rank grounding chunks from ``collection_name`` (and ``user_collection_name``); an empty
    context is a 200 with ``low_confidence: true``."""
    return service_of(request).pipeline.run(body)
