"""Optional bearer-token auth for the service's own endpoints (off by default, like the reference).

The token is referenced, never stored: ``auth_token_var`` names the environment variable
that holds it, read at each request (a rotated token works at once) and compared in
constant time. ``GET /health`` stays open (a liveness probe needs no secret).
"""

from __future__ import annotations

import os
import secrets

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from dashrag.service.state import service_of

bearer = HTTPBearer(auto_error=False, description="Bearer token, when the service is started with auth_token_var.")


def require_token(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
    var = service_of(request).settings.auth_token_var
    if var is None:
        return
    expected = os.environ.get(var)
    if not expected:
        raise HTTPException(503, f"auth: the token variable {var} is not set on the server")
    if credentials is None or not secrets.compare_digest(credentials.credentials.encode(), expected.encode()):
        raise HTTPException(401, "auth: missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})
