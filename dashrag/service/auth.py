"""Optional bearer-token auth for the service's own endpoints (off by default, like the reference).

The token is referenced, never stored: ``auth_token_var`` names the environment variable
that holds it, read at each request (a rotated token works at once) and compared in
constant time. ``GET /health`` stays open (a liveness probe needs no secret), and so do
the OpenAPI document and ``/docs`` (they describe routes and shapes, hold no data, and a
client needs them to learn how to authenticate: docs/security.md).

The check runs twice over, for two reasons: the route dependency (:func:`require_token`)
puts the scheme into the OpenAPI document and guards every GET; the request middleware
calls :func:`token_refusal` for every request with a body *before* it is read, so an
anonymous client cannot make the server buffer (or parse) an upload.
"""

from __future__ import annotations

import os
import secrets

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from dashrag.service.state import service_of

bearer = HTTPBearer(auto_error=False, description="Bearer token, when the service is started with auth_token_var.")
CHALLENGE = {"WWW-Authenticate": "Bearer"}


def token_refusal(var: str | None, authorization: str | None) -> HTTPException | None:
    """Why a request with this ``Authorization`` header is refused (401, or 503 with the variable unset), or None."""
    if var is None:
        return None
    expected = os.environ.get(var)
    if not expected:
        return HTTPException(503, f"auth: the token variable {var} is not set on the server")
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(token.strip().encode(), expected.encode()):
        return HTTPException(401, "auth: missing or wrong bearer token", headers=CHALLENGE)
    return None


def require_token(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
    refusal = token_refusal(service_of(request).settings.auth_token_var, request.headers.get("authorization"))
    if refusal is not None:
        raise refusal
