"""``/mcp``: the MCP server (dashrag/mcp/) over streamable HTTP, behind the service's own bearer token.

Without the ``mcp`` extra there is no route (``/mcp`` is a 404, and the log says why). The
token check is the routes' own :func:`~dashrag.service.auth.require_token`, so a token rotated
or a variable unset answers the same 401 / 503 here as everywhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from dashrag import telemetry
from dashrag.service.auth import bearer, require_token
from dashrag.service.state import Service

logger = logging.getLogger(__name__)


def mcp_route(service: Service) -> tuple[Route, Callable[[], AbstractAsyncContextManager[None]]] | None:
    """The ``/mcp`` route and the context its endpoint runs in (the app's lifespan), or None without the SDK."""
    try:
        from dashrag.mcp.http import MCP_PATH, McpEndpoint
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("mcp"):
            raise
        logger.info("no /mcp: the mcp extra is not installed (pip install 'dashrag[mcp]')")
        return None
    endpoint = McpEndpoint(service.registry, service.settings.host)
    return Route(MCP_PATH, Guarded(service, endpoint)), endpoint.running


class Guarded:
    """An ASGI app (not a function: Starlette would make a function a GET-only endpoint) behind the token."""

    def __init__(self, service: Service, app: ASGIApp):
        self.service, self.app = service, app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.service.settings.auth_token_var:
            request = Request(scope, receive)
            try:
                require_token(request, await bearer(request))
            except HTTPException as exc:
                await JSONResponse({"detail": exc.detail}, exc.status_code, headers=exc.headers)(scope, receive, send)
                return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope.get("headers", ())}
        with telemetry.joined(headers):  # the tools' queries join the caller's trace (docs/otel.md)
            await self.app(scope, receive, send)
