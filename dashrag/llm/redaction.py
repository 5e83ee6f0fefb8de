"""Keeping a secret out of error messages.

A backend may echo the API key it was given (``Incorrect API key provided: sk-...``),
and litellm copies the backend's message into its exception, its ``message``
attribute and the chained openai exception. Those messages end up in tracebacks,
logs and traces, so before an exception leaves dashrag every string it carries
(``args``, string attributes, a parsed error ``body``, and the same for every
exception chained to it) has the secret replaced by :data:`MASK`. The exception
keeps its class, so callers can still tell a timeout from a rate limit.
"""

from __future__ import annotations

from typing import Any

MASK = "[REDACTED]"


def redact(value: Any, secret: str) -> Any:
    """``value`` with every occurrence of ``secret`` masked, inside strings, lists, tuples and dicts."""
    if not secret:
        return value
    if isinstance(value, str):
        return value.replace(secret, MASK)
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
            if isinstance(value, (str, list, tuple, dict)):
                try:
                    setattr(current, name, redact(value, secret))
                except (AttributeError, TypeError):
                    pass  # a read-only attribute; its text is not part of the message
        pending += [current.__cause__, current.__context__]
    return exc
