"""``uvicorn component_services.rag_service.main:app``: the reference's module path starts dashrag's service, with its
settings read from the environment, as a deployment naming that path starts it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import pytest

from tests.service.test_server import announced_server

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_uvicorn_on_the_references_module_path_serves_health_with_settings_from_the_environment():
    env = {**os.environ, "RAG_AUTH_TOKEN_VAR": "TEST_SERVICE_TOKEN", "TEST_SERVICE_TOKEN": "s3cret"}
    command = [sys.executable, "-m", "uvicorn", "component_services.rag_service.main:app", "--host", "127.0.0.1",
               "--port", "0"]
    with announced_server(command, env, cwd=REPO) as (url, _):
        health = httpx.get(f"{url}/health")
        refused = httpx.get(f"{url}/components")  # RAG_AUTH_TOKEN_VAR from the environment: a token is needed
        allowed = httpx.get(f"{url}/components", headers={"Authorization": "Bearer s3cret"})
    assert health.json() == {"service": "rag_service", "status": "ok"}
    assert (refused.status_code, allowed.status_code) == (401, 200)
