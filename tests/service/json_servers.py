"""Loopback fakes of the reference service's dependencies: a JSON endpoint (the upstream rewrite LLM, a Text
Embeddings Inference ``/embed`` server) that answers with a test's function, records what arrived, and counts
the connections held open (HTTP/1.1 keep-alive), so a test can see that the service closed its clients."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

from tests.fixtures.http import LoopbackHTTPServer, send_json

Reply = Callable[[dict], tuple[int, Any]]  # request body -> (status, JSON answer)


@dataclass
class JsonEndpointServer(LoopbackHTTPServer):
    reply: Reply = lambda body: (200, {})  # noqa: E731 - a default answer
    delay: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    open_connections: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> JsonEndpointServer:
        self.start(self._handler())
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests]

    def wait_for_connections(self, count: int, seconds: float = 10.0) -> int:
        """The open connections once they are ``count`` (or after ``seconds``)."""
        deadline = time.monotonic() + seconds
        while self.open_connections != count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.open_connections

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: a connection stays open until the client closes it

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server.open_connections += 1

            def finish(self) -> None:
                super().finish()
                with server._lock:
                    server.open_connections -= 1

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server._lock:
                    server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers.items())})
                time.sleep(server.delay)
                status, answer = server.reply(body)
                send_json(self, status, json.dumps(answer).encode("utf-8"))

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
