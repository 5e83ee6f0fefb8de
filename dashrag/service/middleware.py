"""One pure-ASGI middleware: a request id, what a request may send, and one log line per request.

Pure ASGI rather than ``BaseHTTPMiddleware``: it adds no task or stream per request,
which matters for the service's overhead over an in-process ``retrieve()``. The id is
the client's ``X-Request-ID`` when it sends a sane one, else a new one; it is echoed
in the response headers.

Before the app reads a byte of a body (docs/security.md), in this order:

1. **Origin** (:class:`OriginGuard`): a browser request that changes state (any POST, PUT,
   PATCH or DELETE but the read-only queries in :data:`QUERY_ROUTES`), and its preflight, is
   answered 403 unless it comes from the service's own page or an origin listed by name in
   ``cors_origins``: a web page open in the operator's browser could otherwise start a build
   with a simple multipart POST, which no CORS header stops (CORS guards reading the answer).
2. **Token**: with ``auth_token_var``, a request with a body needs the token (401) before the
   body is read (GETs are checked by the route dependency, dashrag.service.auth).
3. **Size**: the upload limit is for multipart bodies of the routes that take files (``POST /trees``,
   ``POST /trees/upload``, ``POST /trees/{name}/documents[/upload]``: :data:`UPLOAD_ROUTES`) only; every other request
   has the JSON limit, whatever its ``Content-Type``. A body over its limit (by its
   ``Content-Length``, or, for a chunked body, counted while it is buffered) is a 413. The 413 is sent
   at once, then the rest of the body is read and dropped (at most :data:`DRAIN_BYTES`, for at most
   :data:`DRAIN_SECONDS`) before the connection closes: a client that writes its whole body before it
   reads (Python's urllib) would otherwise meet a reset connection, not the 413 (issue 38). A client that
   asked ``Expect: 100-continue`` is not drained: it sends no body until told to.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import Sequence
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

from dashrag.service.auth import token_refusal

logger = logging.getLogger("dashrag.service.requests")

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

REQUEST_ID_HEADER = b"x-request-id"
SANE_ID = re.compile(rb"^[A-Za-z0-9._-]{1,64}$")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: The POST routes that only read: any origin CORS allows may call them (the reference's /retrieve is open to all).
QUERY_ROUTES = re.compile(r"^/(retrieve|trees/validate|trees/[^/]+/query)/?$")
UPLOAD_ROUTES = re.compile(r"/trees(/upload|/[^/]+/documents(/upload)?)?")
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
#: What a body refused as too large may still send, read and dropped, so its client reads the 413.
DRAIN_BYTES = 64 << 20
DRAIN_SECONDS = 10.0


class OriginGuard:
    """Who may send a state-changing request from a browser (the module docstring, step 1).

    The service's own page: an ``Origin`` equal to the request's own scheme and ``Host``, when that
    host is a loopback name or the host the service was told to listen on (a page of another
    name that resolves to this server, DNS rebinding, is not the service's own). Any other
    origin only when listed by name in ``cors_origins``. A request without ``Origin`` is not
    from a browser's cross-site fetch (browsers send one with every cross-origin POST) unless
    ``Sec-Fetch-Site`` says cross-site.
    """

    def __init__(self, cors_origins: list[str], host: str):
        self.origins = frozenset(o.rstrip("/") for o in cors_origins if o != "*")
        self.own_hosts = LOOPBACK_HOSTS | ({host.lower()} if host not in ("0.0.0.0", "::", "") else set())

    def refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> str | None:
        origin = headers.get(b"origin", b"").decode("latin-1").rstrip("/")
        if not origin:
            site = headers.get(b"sec-fetch-site", b"").decode("latin-1")
            return "cross-origin: a cross-site browser request may not change state" if site == "cross-site" else None
        if origin in self.origins or self._own_page(scope, headers, origin):
            return None
        return (f"cross-origin: {origin[:100]} may not change state here; the operator lists an origin by name in "
                "cors_origins (docs/security.md)")

    def _own_page(self, scope: Scope, headers: dict[bytes, bytes], origin: str) -> bool:
        host = headers.get(b"host", b"").decode("latin-1")
        try:
            hostname = urlsplit(f"//{host}").hostname
        except ValueError:
            return False
        return origin == f"{scope.get('scheme', 'http')}://{host}" and hostname in self.own_hosts


class RequestMiddleware:
    def __init__(self, app: ASGIApp, max_json_bytes: int, max_upload_bytes: int,
                 origins: OriginGuard | None = None, token_var: str | None = None):
        self.app = app
        self.max_json_bytes = max_json_bytes
        self.max_upload_bytes = max_upload_bytes
        self.origins = origins
        self.token_var = token_var

    def limit_for(self, scope: Scope) -> int:
        content_type = dict(scope["headers"]).get(b"content-type", b"")
        upload = scope["method"] == "POST" and UPLOAD_ROUTES.fullmatch(scope["path"].rstrip("/")) is not None
        return self.max_upload_bytes if upload and content_type.startswith(b"multipart/") else self.max_json_bytes

    def refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """Steps 1 and 2 of the module docstring: (status, detail, headers) of the refusal, or None."""
        method, path = scope["method"], scope["path"]
        preflight = headers.get(b"access-control-request-method") if method == "OPTIONS" else None
        requested = preflight.decode("latin-1").upper() if preflight else method
        if self.origins is not None and requested in BODY_METHODS and not QUERY_ROUTES.match(path):
            problem = self.origins.refusal(scope, headers)
            if problem:
                return 403, problem, []
        if method in BODY_METHODS:
            authorization = headers.get(b"authorization")
            refused = token_refusal(self.token_var, authorization.decode("latin-1") if authorization else None)
            if refused is not None:
                return refused.status_code, str(refused.detail), [
                    (k.lower().encode(), v.encode()) for k, v in (refused.headers or {}).items()]
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = dict(scope["headers"])
        given = headers.get(REQUEST_ID_HEADER, b"")
        request_id = given.decode() if SANE_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        limit = self.limit_for(scope)
        status = {"code": 500}
        refused = self.refusal(scope, headers)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message["headers"] = [*message.get("headers", []), (REQUEST_ID_HEADER, request_id.encode())]
            await send(message)

        length = headers.get(b"content-length")
        drain = receive if headers.get(b"expect", b"").lower() != b"100-continue" else None
        if refused is not None:
            await self._answer(send_with_id, *refused)
        elif length is not None and length.isdigit():
            if int(length) > limit:
                await self._too_large(send_with_id, limit, drain)
            else:  # the server enforces the declared length: the app may stream the body itself
                await self.app(scope, receive, send_with_id)
        else:
            messages = await self._buffer(receive, limit)
            if messages[-1].get("more_body", False):  # over the limit, and more to come
                await self._too_large(send_with_id, limit, drain)
            elif sum(len(m.get("body", b"")) for m in messages) > limit:
                await self._too_large(send_with_id, limit, None)
            else:
                await self.app(scope, self._replay(messages, receive), send_with_id)
        logger.info("request", extra={"request_id": request_id, "method": scope["method"], "path": scope["path"],
                                      "status": status["code"],
                                      "elapsed_ms": round((time.perf_counter() - started) * 1000, 3)})

    @staticmethod
    async def _buffer(receive: Receive, limit: int) -> list[Message]:
        """A body of unknown length (chunked), read until it ends or passes ``limit`` (its last message then
        says whether more follows)."""
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return messages
            size += len(message.get("body", b""))
            if size > limit or not message.get("more_body", False):
                return messages

    @staticmethod
    def _replay(messages: list[Message], receive: Receive) -> Receive:
        pending = list(messages)

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        return replay

    @classmethod
    async def _too_large(cls, send: Send, limit: int, drain: Receive | None) -> None:
        """The 413 at once; then, with ``drain``, the rest of the body read and dropped (bounded) before the
        response ends and the connection closes (the module docstring, step 3)."""
        await cls._answer(send, 413, f"request body: larger than the limit of {limit} bytes for this route",
                          finished=drain is None)
        if drain is not None:
            try:
                await asyncio.wait_for(cls._drain(drain), DRAIN_SECONDS)
            except TimeoutError:
                pass
            await send({"type": "http.response.body", "body": b""})

    @staticmethod
    async def _drain(receive: Receive) -> None:
        read = 0
        while read <= DRAIN_BYTES:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return
            read += len(message.get("body", b""))

    @staticmethod
    async def _answer(send: Send, status: int, detail: str, headers: Sequence[tuple[bytes, bytes]] = (),
                      finished: bool = True) -> None:
        """An error answer without reading the body; ``Connection: close``, so the unread body is not parsed.
        Not ``finished``: its bytes are all sent, and the caller ends the response (after a drain)."""
        body = json.dumps({"detail": detail}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close"), *headers]})
        await send({"type": "http.response.body", "body": body, "more_body": not finished})
