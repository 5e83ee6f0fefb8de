"""OpenTelemetry export of every query's trace tree, on when the standard variables say so (docs/otel.md).

``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set and
``OTEL_SDK_DISABLED`` not true: :func:`start_from_environment` (run when ``dashrag`` is imported)
installs the exporter of :mod:`dashrag.telemetry.otel` as the query observer (core/observe.py).
Unset: this module reads two variables and imports nothing (tests/telemetry/test_off.py).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dashrag.telemetry.otel import RequestNotes

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def wanted() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(os.environ.get(name) for name in ENDPOINT_VARIABLES)


def start_from_environment() -> bool:
    """Install the exporter when the variables ask for it; True when it runs. Without the ``otel`` extra
    the variables are reported once on the log and queries go on unobserved."""
    if not wanted():
        return False
    try:
        from dashrag.telemetry.otel import install
    except ModuleNotFoundError as exc:
        logging.getLogger(__name__).warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the otel extra is not installed (pip install 'dashrag[otel]'): "
            "%s; no spans are exported", exc)
        return False
    install()
    return True


def active() -> bool:
    """Spans are being exported (the exporter module is loaded only when they are)."""
    otel = sys.modules.get("dashrag.telemetry.otel")
    return otel is not None and otel.active()


def request_span(name: str, headers: Mapping[str, str], query: str,
                 attributes: Mapping[str, Any]) -> AbstractContextManager[RequestNotes]:
    """A service request's span in the caller's trace (:func:`dashrag.telemetry.otel.request_span`);
    only while :func:`active`."""
    from dashrag.telemetry.otel import request_span as span

    return span(name, headers, query, attributes)


def joined(headers: Mapping[str, str]) -> AbstractContextManager[None]:
    """While :func:`active`, the queries made inside join the trace of ``headers``' ``traceparent``
    (:func:`dashrag.telemetry.otel.joined`); otherwise nothing (and nothing imported)."""
    if not active():
        return nullcontext()
    from dashrag.telemetry.otel import joined as join

    return join(headers)
