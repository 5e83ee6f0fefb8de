"""Structured logs: one JSON object a line (``LOG_FORMAT=json``, the default) or one plain text line
(``LOG_FORMAT=text``), with the request id of the request being served.

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


class TextFormatter(logging.Formatter):
    """``time level logger: message key=value ...``: the same fields as the JSON lines, for a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + "Z"
        extra = " ".join(f"{name}={getattr(record, name)}" for name in FIELDS if hasattr(record, name))
        line = f"{stamp} {record.levelname} {record.name}: {record.getMessage()}" + (f" {extra}" if extra else "")
        if record.exc_info and record.levelno >= logging.ERROR:
            line += "\n" + self.formatException(record.exc_info)
        return line


FORMATTERS: dict[str, type[logging.Formatter]] = {"json": JsonFormatter, "text": TextFormatter}


def configure_logging(level: str, log_format: str = "json") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(FORMATTERS[log_format]())
    for name in ("dashrag", "uvicorn.error"):
        log = logging.getLogger(name)
        log.handlers = [handler]
        log.setLevel(level.upper())
        log.propagate = False
