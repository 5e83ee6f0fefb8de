"""Streamable HTTP for the MCP server, as one ASGI endpoint the service routes ``/mcp`` to.

The SDK's session manager runs once per lifespan (it cannot be restarted), so :class:`McpEndpoint`
makes a fresh one each time the service starts (:meth:`running`) and hands requests to it. The
transport is stateless with JSON answers: every request stands alone, as the service's own
routes do, so a restarted or replicated service needs no session affinity.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.types import ASGIApp, Receive, Scope, Send

from dashrag.mcp.server import mcp_server
from dashrag.service.collections import CollectionRegistry

MCP_PATH = "/mcp"


class McpEndpoint:
    def __init__(self, registry: CollectionRegistry, host: str):
        self.registry = registry
        self.host = host
        self._app: ASGIApp | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        server = mcp_server(self.registry)
        starlette_app = server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True,
                                                   json_response=True, host=self.host)
        async with server.session_manager.run():
            self._app = starlette_app
            try:
                yield
            finally:
                self._app = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            raise RuntimeError("the MCP endpoint is called outside the service's lifespan")
        await self._app(scope, receive, send)
