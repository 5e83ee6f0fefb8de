"""What a JSON body may be, and how its problems are told (docs/security.md).

* **Strict JSON** (:class:`StrictJSONRoute`, every router's ``route_class``): ``NaN``,
  ``Infinity`` and numbers that overflow to infinity are not JSON, and a key given twice in
  one object is ambiguous; each is a 422 ``json_invalid`` naming what, never a 500 (the 422
  once echoed the NaN back and could not be serialised) and never a silent last-key-wins.
* **Off the event loop** (:class:`StrictJSONRequest`): a body of :data:`OFF_LOOP_BYTES` or more is
  parsed in a worker thread. The parse runs Python for every object (the duplicate-key check),
  so a 1 MiB body of small objects or numbers held the event loop, and ``/health`` with it, for
  130-190 ms; in a thread it yields the GIL like any query (docs/security.md, "The event loop
  under load"). Smaller bodies parse in under 3 ms, less than the hand-off would cost.
* **No echo of large inputs** (:func:`validation_error_body`): FastAPI's 422 repeats each
  wrong value under ``input``. A value longer than :data:`MAX_ECHO` characters of JSON is
  replaced by a note of its size, so a 1 MiB body does not come back as 1 MiB of error.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Coroutine

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from dashrag.core.config_json import strict_loads

MAX_ECHO = 200
OFF_LOOP_BYTES = 16 << 10


def strict_body(raw: bytes) -> Any:
    """The JSON of a body a route reads itself (multipart routes that also take JSON): as strict as every other
    route's, a 422 ``json_invalid`` naming what (a key twice, NaN, not JSON) otherwise."""
    try:
        return strict_loads(raw or b"null", finite=True)
    except json.JSONDecodeError as exc:
        raise RequestValidationError([{"loc": ["body"], "type": "json_invalid", "msg": f"not JSON: {exc}"}]) from None


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            self._json = strict_loads(body, finite=True) if len(body) < OFF_LOOP_BYTES \
                else await run_in_threadpool(strict_loads, body, True)
        return self._json


class StrictJSONRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict


def _shown(value: Any) -> Any:
    try:
        encoded = jsonable_encoder(value)
        text = json.dumps(encoded, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")  # a lone surrogate in the input cannot be sent back as it is
    except (TypeError, ValueError):
        return repr(value)[:MAX_ECHO]  # repr escapes what UTF-8 cannot hold
    return encoded if len(text) <= MAX_ECHO else f"<{len(text)} characters, not echoed>"


def validation_error_body(exc: RequestValidationError) -> dict[str, Any]:
    """FastAPI's 422 body with each ``input`` bounded and JSON-safe."""
    problems = []
    for error in exc.errors():
        shown = dict(error)
        if "input" in shown:
            shown["input"] = _shown(shown["input"])
        if "ctx" in shown:
            shown["ctx"] = {k: _shown(v) for k, v in shown["ctx"].items()}
        problems.append(shown)
    return {"detail": jsonable_encoder(problems)}


NOT_AN_OBJECT = frozenset({"model_attributes_type", "dict_type"})


def content_type_named(error: dict[str, Any], content_type: str | None) -> dict[str, Any]:
    """A JSON route's body sent without ``content-type: application/json`` (curl's ``-d`` sends
    ``application/x-www-form-urlencoded``) reaches pydantic as text: "Input should be a valid dictionary" says
    nothing of why. The message then names the content type expected and the one received."""
    media = (content_type or "").split(";")[0].strip().lower()
    if tuple(error.get("loc", ())) != ("body",) or error.get("type") not in NOT_AN_OBJECT or \
            media == "application/json" or media.endswith("+json"):
        return error
    received = f"content-type {media}" if media else "no content-type"
    return {**error, "msg": f"the body must be JSON sent with content-type: application/json (received {received}; "
                            "curl: -H 'content-type: application/json')"}
