"""The loopback OpenAI-compatible server, one per test, stopped even when the test fails."""

from __future__ import annotations

import pytest

from .openai_server import ScriptedOpenAIServer


@pytest.fixture
def openai_server():
    with ScriptedOpenAIServer() as server:
        yield server
