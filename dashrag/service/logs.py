"""Structured logs: one JSON object a line, with the request id of the request being served.

At INFO the service logs each request's method, path, status, duration and id, never a
query text, a body or a header value (so never a secret). ``configure_logging`` is
called by ``dashrag serve``; a library user keeps their own logging set-up.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

FIELDS = ("request_id", "method", "path", "status", "elapsed_ms", "job_id", "collection")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + "Z",
                                 "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        entry.update({name: getattr(record, name) for name in FIELDS if hasattr(record, name)})
        if record.exc_info and record.levelno >= logging.ERROR:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("dashrag", "uvicorn.error"):
        log = logging.getLogger(name)
        log.handlers = [handler]
        log.setLevel(level.upper())
        log.propagate = False
