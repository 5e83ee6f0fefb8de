"""Liveness, the component registry and the components' JSON Schemas."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, HTTPException, Request

from dashrag.errors import FilterError, UnknownComponentError
from dashrag.filters import filter_schema, parse_filter
from dashrag.service.json_body import StrictJSONRoute
from dashrag.service.models import ComponentMeta, ComponentSchema, FilterCheck, FilterSchema, Health
from dashrag.service.routes import errors
from dashrag.service.state import service_of

open_router = APIRouter(route_class=StrictJSONRoute)
router = APIRouter(route_class=StrictJSONRoute)


@open_router.get("/health", response_model=Health)
def health() -> Health:
    """A static liveness check: it probes nothing."""
    return Health()


@router.get("/components", response_model=list[ComponentMeta], response_model_exclude_unset=True,
            responses=errors(401, 503))
def components(request: Request) -> list[dict[str, Any]]:
    """Every registered component's frontend metadata (as frontend_meta/<Name>.json) plus its ``name``."""
    return service_of(request).components


@router.get("/schemas", response_model=dict[str, ComponentSchema], response_model_exclude_unset=True,
            responses=errors(401, 503))
def schemas(request: Request) -> dict[str, dict[str, Any]]:
    """Every component's JSON Schema by name (as schemas/<Name>.json): the page's forms need them all on each load,
    one request where it made one for each component."""
    return service_of(request).component_schemas()


@router.get("/schemas/filter", response_model=FilterSchema, responses=errors(401, 503))
def filter_schema_route() -> dict[str, Any]:
    """The metadata filter language's JSON Schema (as schemas/filter.schema.json)."""
    return filter_schema()


@router.post("/schemas/filter/check", response_model=FilterCheck, responses=errors(401, 503))
def check_filter(filters: Any = Body(..., description="Any JSON: the filter to check.")) -> dict[str, Any]:
    """A filter checked by the code the CLI, /retrieve and /trees/{name}/query use (``parse_filter``), so the
    page says what they say (a bare list: 'a filter is a JSON object, not a list'), in one message."""
    try:
        parse_filter(filters)
    except FilterError as exc:
        return {"errors": [{"path": exc.path, "message": exc.reason}]}
    return {"errors": []}


@router.get("/schemas/{component}", response_model=ComponentSchema, response_model_exclude_unset=True,
            responses=errors(401, 404, 503))
def schema(component: str, request: Request) -> dict[str, Any]:
    """One component's JSON Schema (as schemas/<Name>.json)."""
    try:
        return service_of(request).component_schema(component)
    except UnknownComponentError as exc:
        raise HTTPException(404, str(exc)) from None
