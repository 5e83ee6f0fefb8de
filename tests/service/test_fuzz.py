"""The whole API fuzzed from its own OpenAPI document with schemathesis (bounded).

Every operation gets a few dozen generated requests (valid and invalid); every answer
must match its documented status and schema, and no 5xx other than the documented 503
may appear. The app serves copies of the session's trees, so a fuzzed DELETE or build
touches nothing else; it has no data root, so no fuzzed path reaches the disk.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings

EXAMPLES_PER_OPERATION = 25


class ServedApp:
    """The ASGI app under test. The schema is read when this module is imported (schemathesis makes one
    test per operation from it), before fixtures exist; each test then points this at an app over its own
    copy of the trees."""

    def __init__(self) -> None:
        self.app = create_app(ServiceSettings())

    async def __call__(self, scope, receive, send) -> None:
        await self.app(scope, receive, send)


SERVED = ServedApp()
schema = schemathesis.openapi.from_asgi("/openapi.json", SERVED)


@pytest.fixture(autouse=True)
def app_over_tree_copies(trees_copy):
    SERVED.app = create_app(ServiceSettings(trees_dir=trees_copy))


@pytest.mark.slow  # a few dozen requests for every operation of the API: left out of the quick loop
@pytest.mark.timeout(300)
@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_every_operation_answers_as_documented(case):
    # a build's config, chunker and corpus are checked beyond what a schema can say (a registered component,
    # a readable corpus): a schema-valid body may still be a documented 422 there
    semantic = case.operation.path in ("/trees", "/trees/upload") and case.operation.method.upper() == "POST"
    # a metadata filter is checked against its own schema (GET /schemas/filter) and the corpus, not the OpenAPI's
    semantic = semantic or (isinstance(case.body, dict) and case.body.get("filters") is not None)
    response = case.call_and_validate(excluded_checks=[positive_data_acceptance] if semantic else None)
    assert response.status_code < 500 or response.status_code == 503
