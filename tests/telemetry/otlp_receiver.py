"""A real OTLP/HTTP trace receiver on loopback: decodes each POST /v1/traces with opentelemetry-proto."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.fixtures.http import LoopbackHTTPServer


def _value(attribute: dict[str, Any]) -> Any:
    value = attribute["value"]
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    return value


class OtlpReceiver:
    """``spans``: every span received, as ``{name, span_id, parent_id, trace_id, attributes, start, end,
    service}`` (ids hex, times in ns)."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.add(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._handler = Handler
        self._http = LoopbackHTTPServer()

    @property
    def url(self) -> str:
        return self._http.url

    def add(self, request: ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    data = MessageToDict(span)
                    with self.lock:
                        self.spans.append({
                            "name": span.name, "span_id": span.span_id.hex(), "trace_id": span.trace_id.hex(),
                            "parent_id": span.parent_span_id.hex() or None,
                            "attributes": {a["key"]: _value(a) for a in data.get("attributes", [])},
                            "start": span.start_time_unix_nano, "end": span.end_time_unix_nano,
                            "service": resource.get("service.name")})

    def wait_for(self, count: int, trace: str | None = None, timeout: float = 30) -> list[dict[str, Any]]:
        """The spans once ``count`` have come (only those of ``trace`` counted, when given) or ``timeout`` passed, and
        a moment more for any extra."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                arrived = sum(trace is None or s["trace_id"] == trace for s in self.spans)
            if arrived >= count:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        return list(self.spans)

    def __enter__(self) -> OtlpReceiver:
        self._http.start(self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._http.stop()
