"""``create_app(settings) -> FastAPI``: the retrieval service and the tree API, and the web page at ``/``.

Statuses (every one documented in the OpenAPI): 200; 202 (a build job accepted);
204 (a tree deleted); 401 (bearer token, when configured); 404 (no such collection,
tree, job or component); 409 (a tree name taken); 413 (a body over the limit);
422 (an empty query, any malformed body: FastAPI's validation errors; never a 400);
503 (a pipeline step or an upstream dependency failed: the body names the step).
An unexpected error is logged with its request id and answered 500 without details.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

from fastapi import Depends, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException

from dashrag.errors import FilterError
from dashrag.service.auth import require_token
from dashrag.service.json_body import content_type_named, validation_error_body
from dashrag.service.mcp_route import mcp_route
from dashrag.service.middleware import OriginGuard, RequestMiddleware
from dashrag.service.openapi_document import for_generators
from dashrag.service.pipeline import NoCollection, StepFailure
from dashrag.service.routes import documents, learn, meta, retrieve, trees
from dashrag.service.settings import ServiceSettings
from dashrag.service.state import build_service
from dashrag.web import routes as web_routes
from dashrag.web.page_files import PageFiles

logger = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parents[1] / "web" / "static"


def operation_id(route: APIRoute) -> str:
    """An operation's id is its route's name (``retrieve``, ``list_trees``): what a generated client calls."""
    return route.name


def unknown_key_named(error: dict) -> dict:
    """An ``extra_forbidden`` error worded with its key (``unknown key 'top_k'``); any other error as it is."""
    if error.get("type") != "extra_forbidden" or not error.get("loc"):
        return error
    return {**error, "msg": f"unknown key {str(error['loc'][-1])!r}: not a field of this body"}


def create_app(settings: ServiceSettings | None = None, static_dir: Path | None = STATIC_DIR) -> FastAPI:
    settings = settings or ServiceSettings()
    service = build_service(settings)
    mcp = mcp_route(service)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if mcp is not None:
                await stack.enter_async_context(mcp[1]())
            yield
        service.close()

    app = FastAPIOffline(title="dashrag retrieval service", version="1", lifespan=lifespan,
                  description="Fetches and ranks grounding chunks (never generates an answer); builds and "
                              "queries retriever trees.",
                  license_info={"name": "Apache-2.0", "identifier": "Apache-2.0"},
                  servers=[{"url": f"http://{settings.host}:{settings.port}", "description": "as configured"}],
                  generate_unique_id_function=operation_id)
    app.state.service = service
    guarded = [Depends(require_token)] if settings.auth_token_var else []  # the OpenAPI shows auth only when on
    app.include_router(meta.open_router, tags=["meta"])
    guarded_routers = (meta.router, retrieve.router, trees.router, documents.router, learn.router,
                       web_routes.router)  # web: GET /presets
    for router, tag in zip(guarded_routers, ("meta", "retrieval", "trees", "documents", "learning", "web")):
        app.include_router(router, dependencies=guarded, tags=[tag])
    api_routes = [r for router in (meta.open_router, *guarded_routers)
                  for r in router.routes if isinstance(r, APIRoute)]

    @app.exception_handler(StepFailure)
    async def step_failed(request: Request, exc: StepFailure) -> JSONResponse:
        # the operator's log keeps what the body hides (paths, internal URLs; secrets are masked before both)
        logger.warning("step %s failed: %s", exc.step, exc,
                       exc_info=exc.__cause__ is not None and logger.isEnabledFor(10),
                       extra={"request_id": request.scope.get("state", {}).get("request_id")})
        return JSONResponse({"detail": service.locations.hide(str(exc), urls=True)}, status_code=503)

    @app.exception_handler(FilterError)
    async def bad_filter(request: Request, exc: FilterError) -> JSONResponse:
        """A filter that does not fit the corpus (a number compared with a field of strings): a 422 like a
        malformed one, located at the filter and naming the path inside it."""
        problem = {"loc": ["body", "filters"], "msg": str(exc), "type": "filter", "path": exc.path}
        return JSONResponse({"detail": [problem]}, status_code=422)

    @app.exception_handler(NoCollection)
    async def no_collection(request: Request, exc: NoCollection) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        """pydantic says only "Extra inputs are not permitted" of an unknown key: the message names the key;
        no ``input`` longer than 200 characters is echoed, and a NaN in it is no 500 (json_body)."""
        content_type = request.headers.get("content-type")
        named = RequestValidationError([content_type_named(unknown_key_named(e), content_type) for e in exc.errors()])
        return JSONResponse(validation_error_body(named), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        """FastAPI answers 400 to a body it cannot decode; the contract says a malformed body is a 422."""
        if exc.status_code == 400:
            problem = {"loc": ["body"], "type": "json_invalid",
                       "msg": f"the body cannot be read as JSON ({exc.detail})"}
            return JSONResponse({"detail": [problem]}, status_code=422)
        if isinstance(exc.detail, str):  # a 404 or 409 worded from a library's message: no server path
            hidden = service.locations.hide(exc.detail, urls=exc.status_code >= 500)
            exc = StarletteHTTPException(exc.status_code, hidden, exc.headers)
        return await http_exception_handler(request, exc)

    @app.exception_handler(405)
    async def method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
        """405 with the methods of every route of the path's template (Starlette names only one route's)."""
        path = request.scope["path"]
        first = next((r for r in api_routes if r.path_regex.match(path)), None)  # the route the path means
        if first is None:  # the web page's files answer only GET; any other method on no route is a 404
            return JSONResponse({"detail": f"no route {request.method} {path[:200]}"}, status_code=404)
        methods = sorted({m for r in api_routes if first is not None and r.path == first.path for m in r.methods or ()})
        return JSONResponse({"detail": f"{request.method} is not allowed here; use {', '.join(methods)}"},
                            status_code=405, headers={"Allow": ", ".join(methods)})

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        request_id = request.scope.get("state", {}).get("request_id")
        logger.error("unexpected error", exc_info=exc, extra={"request_id": request_id})
        return JSONResponse({"detail": f"internal error (request {request_id})"}, status_code=500)

    if mcp is not None:
        app.router.routes.append(mcp[0])  # before the page's mount at "/", which would answer it otherwise
    if static_dir is not None and static_dir.is_dir():
        app.mount("/", PageFiles(directory=static_dir, html=True, api=app.router), name="web")
    app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"],
                       allow_headers=["*"], allow_credentials="*" not in settings.cors_origins)
    app.add_middleware(RequestMiddleware, max_json_bytes=settings.max_request_bytes,
                       max_upload_bytes=settings.max_upload_bytes,
                       origins=OriginGuard(settings.cors_origins, settings.host), token_var=settings.auth_token_var)
    served_document = type(app).openapi

    def openapi() -> dict:
        """FastAPI's document, as client generators read it (service/openapi_document.py); made once."""
        if app.openapi_schema is None:
            app.openapi_schema = for_generators(served_document(app), guarded=bool(settings.auth_token_var))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
