"""A real Text Embeddings Inference-style ``/rerank`` server on loopback, for the reranker tests.

``RerankServer`` runs the standard library's threading HTTP server on 127.0.0.1 with
port 0 (the OS picks a free one) in a daemon thread. It scores every text with a
plain Python function of (query, text), answers ``[{"index", "score"}]`` best first
as TEI does, and records what arrived (bodies, headers) and the most requests it
was serving at once. A test can replace the answer (``answer``) to play a broken
or failing server, and slow each request down (``delay``) to make overlap visible.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

from tests.fixtures.http import LoopbackHTTPServer, send_json

Answer = Callable[[dict, dict], tuple[int, bytes]]  # (body, headers) -> (status, raw response body)


def word_overlap(query: str, text: str) -> float:
    """Share of the query's words found in the text (a deterministic stand-in for a model)."""
    words = set(re.findall(r"\w+", query.lower()))
    found = set(re.findall(r"\w+", text.lower()))
    return len(words & found) / len(words) if words else 0.0


@dataclass
class RerankServer(LoopbackHTTPServer):
    #: where the protocol's requests go, and the body's list of texts (subclasses speak other protocols)
    PATH = "/rerank"
    TEXTS = "texts"

    score: Callable[[str, str], float] = word_overlap
    delay: float = 0.0
    #: hold the first requests until this many are in flight at once (or 10 s pass), so that a client's
    #: concurrency shows whatever the machine's load (a delay alone lets a busy machine start them late)
    gather: int = 0
    answer: Answer | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    max_in_flight: int = 0
    _in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _gathered: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._gathered = threading.Condition(self._lock)

    def __enter__(self) -> RerankServer:
        self.start(self._handler())
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def queries(self) -> list[str]:
        return [r["body"]["query"] for r in self.requests]

    @property
    def texts(self) -> list[str]:
        return [t for r in self.requests for t in r["body"][self.TEXTS]]

    def ranking(self, body: dict) -> Any:
        scored = [{"index": i, "score": self.score(body["query"], t)} for i, t in enumerate(body["texts"])]
        return sorted(scored, key=lambda e: -e["score"])  # TEI answers best first, not in text order

    def _respond(self, body: dict, headers: dict) -> tuple[int, bytes]:
        if self.answer is not None:
            return self.answer(body, headers)
        return 200, json.dumps(self.ranking(body)).encode("utf-8")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                headers = dict(self.headers.items())
                with server._lock:
                    server.requests.append({"path": self.path, "body": body, "headers": headers})
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                    server._gathered.notify_all()
                    server._gathered.wait_for(lambda: server.max_in_flight >= server.gather, timeout=10)
                try:
                    time.sleep(server.delay)
                    status, payload = (
                        (404, b"not found") if self.path != server.PATH else server._respond(body, headers)
                    )
                finally:
                    with server._lock:
                        server._in_flight -= 1
                send_json(self, status, payload)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
