"""One pure-ASGI middleware: a request id, a body size limit, and one log line per request.

Pure ASGI rather than ``BaseHTTPMiddleware``: it adds no task or stream per request,
which matters for the service's overhead over an in-process ``retrieve()``. The id is
the client's ``X-Request-ID`` when it sends a sane one, else a new one; it is echoed
in the response headers. A body over the limit (by its ``Content-Length``, or, for a chunked
body of unknown length, counted while it is buffered) is answered 413 before the app reads it.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any, Awaitable, Callable

logger = logging.getLogger("dashrag.service.requests")

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

REQUEST_ID_HEADER = b"x-request-id"
SANE_ID = re.compile(rb"^[A-Za-z0-9._-]{1,64}$")


class RequestMiddleware:
    def __init__(self, app: ASGIApp, max_json_bytes: int, max_upload_bytes: int):
        self.app = app
        self.max_json_bytes = max_json_bytes
        self.max_upload_bytes = max_upload_bytes

    def limit_for(self, scope: Scope) -> int:
        content_type = dict(scope["headers"]).get(b"content-type", b"")
        return self.max_upload_bytes if content_type.startswith(b"multipart/") else self.max_json_bytes

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

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message["headers"] = [*message.get("headers", []), (REQUEST_ID_HEADER, request_id.encode())]
            await send(message)

        length = headers.get(b"content-length")
        if length is not None and length.isdigit():
            if int(length) > limit:
                await self._too_large(send_with_id, limit)
            else:  # the server enforces the declared length: the app may stream the body itself
                await self.app(scope, receive, send_with_id)
        else:
            messages = await self._buffer(receive, limit)
            if messages is None:
                await self._too_large(send_with_id, limit)
            else:
                await self.app(scope, self._replay(messages, receive), send_with_id)
        logger.info("request", extra={"request_id": request_id, "method": scope["method"], "path": scope["path"],
                                      "status": status["code"],
                                      "elapsed_ms": round((time.perf_counter() - started) * 1000, 3)})

    @staticmethod
    async def _buffer(receive: Receive, limit: int) -> list[Message] | None:
        """A body of unknown length (chunked), read up to ``limit``; None when it is longer."""
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return messages
            size += len(message.get("body", b""))
            if size > limit:
                return None
            if not message.get("more_body", False):
                return messages

    @staticmethod
    def _replay(messages: list[Message], receive: Receive) -> Receive:
        pending = list(messages)

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        return replay

    @staticmethod
    async def _too_large(send: Send, limit: int) -> None:
        body = json.dumps({"detail": f"request body: larger than the limit of {limit} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
