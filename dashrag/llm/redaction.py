"""Keeping a secret out of error messages.

A backend may echo the API key it was given (``Incorrect API key provided: sk-...``),
and litellm copies the backend's message into its exception, its ``message``
attribute and the chained openai exception. Those messages end up in tracebacks,
logs and traces, so before an exception leaves dashrag every string it carries
(``args``, string attributes, a parsed error ``body``, and the same for every
exception chained to it) has the secret replaced by :data:`MASK`. The exception
keeps its class, so callers can still tell a timeout from a rate limit.

**Every form of the secret** is masked, not only the raw value: a message may quote
it escaped (``repr`` or JSON of a value holding a quote or a backslash, percent-
encoded in a URL) or inside an HTTP ``Authorization: Basic`` header, which is the
base64 of ``user:key``. The user part is unknown, so the key's base64 is computed at
the three alignments it can have inside a longer base64 text, and the run of
characters that depends on the key alone is masked (:func:`secret_forms`).
"""

from __future__ import annotations

import base64
import json
import logging
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Iterator
from urllib.parse import quote

MASK = "[REDACTED]"
#: Base64 forms are masked for keys at least this long (a shorter run could match innocent text).
MIN_BASE64_KEY = 8


@lru_cache(maxsize=32)
def secret_forms(secret: str) -> tuple[str, ...]:
    """The texts that reveal ``secret``: raw, escaped, quoted, percent-encoded, and its base64 at any offset."""
    forms = {secret, json.dumps(secret)[1:-1], repr(secret)[1:-1], quote(secret, safe=""),
             repr(secret.encode("utf-8"))[2:-1]}
    raw = secret.encode("utf-8")
    if len(raw) >= MIN_BASE64_KEY:
        for offset in range(3):
            encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
            start = 4 if offset else 0  # the first group mixes in the bytes before the key
            forms.add(encoded[start:len(encoded) - 4])  # the last group mixes in the bytes after it
            forms.add(base64.urlsafe_b64encode(b"\0" * offset + raw).decode("ascii")[start:len(encoded) - 4])
    return tuple(sorted((f for f in forms if f), key=len, reverse=True))


def redact(value: Any, secret: str) -> Any:
    """``value`` with every form of ``secret`` masked, inside strings, lists, tuples and dicts."""
    if not secret:
        return value
    if isinstance(value, str):
        for form in secret_forms(secret):
            value = value.replace(form, MASK)
        return value
    if isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
        masked = redact(text, secret)
        return value if masked == text else masked.encode("utf-8")
    if isinstance(value, list):
        return [redact(v, secret) for v in value]
    if isinstance(value, tuple):
        return tuple(redact(v, secret) for v in value)
    if isinstance(value, dict):
        return {redact(k, secret): redact(v, secret) for k, v in value.items()}
    return value


def scrub_exception(exc: BaseException, secret: str) -> BaseException:
    """Mask ``secret`` in ``exc`` and in every exception chained to it (``__cause__``/``__context__``), in place."""
    if not secret:
        return exc
    pending: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.args = redact(current.args, secret)
        for name, value in list(vars(current).items()):
            if isinstance(value, (str, bytes, list, tuple, dict)):
                try:
                    setattr(current, name, redact(value, secret))
                except (AttributeError, TypeError):
                    pass  # a read-only attribute; its text is not part of the message
        pending += [current.__cause__, current.__context__]
    return exc


class RedactingFilter(logging.Filter):
    """A logging filter that masks every form of one secret in the records it passes."""

    def __init__(self, secret: str):
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact(message, self.secret)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


@contextmanager
def redacting_logs(secret: str) -> Iterator[None]:
    """While a request holding ``secret`` runs, mask it in every log record any handler writes."""
    if not secret:
        yield
        return
    log_filter = RedactingFilter(secret)
    handlers = {h for logger in (logging.getLogger(), *_library_loggers()) for h in logger.handlers}
    for handler in handlers:
        handler.addFilter(log_filter)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(log_filter)


def _library_loggers() -> list[logging.Logger]:
    """Loggers that do not propagate to the root (litellm's own) but may write a request's headers."""
    return [logging.getLogger(name) for name in ("LiteLLM", "LiteLLM Proxy", "LiteLLM Router", "httpx", "openai")]
