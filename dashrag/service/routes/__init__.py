"""The HTTP routes, one module per area; ``responses`` below documents every status they answer."""

from __future__ import annotations

from typing import Any

from dashrag.service.models import ErrorBody, ValidationErrorBody


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for error statuses, each with the ``{"detail": str}`` body."""
    described = {401: "Missing or wrong bearer token (only when auth is configured).",
                 403: "A state-changing request from another origin (docs/security.md).",
                 429: "Too many jobs queued or running, or too many upload bytes queued: the body names the limit; "
                      "try again later.",
                 404: "Not found: the body names what.", 409: "The name is taken.",
                 413: "The request body is over the size limit.",
                 503: "A pipeline step or upstream dependency failed: the body names the step."}
    return {status: {"model": ErrorBody, "description": described[status]} for status in statuses}


def invalid(description: str) -> dict[int | str, dict[str, Any]]:
    """The 422 of a route with a body: FastAPI's validation errors, described for this route."""
    return {422: {"model": ValidationErrorBody, "description": description}}
