"""``/docs`` (Swagger UI) draws the API offline: every asset comes from the server, none from a CDN."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest


@pytest.mark.parametrize("viewport", [(1280, 720), (1920, 1080)])
def test_the_api_docs_render_with_no_request_leaving_the_server(browser, server, problems, viewport):
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    elsewhere: list[str] = []

    def only_the_server(route):  # the machine is offline: anything not from the server is refused and recorded
        if urlparse(route.request.url).netloc == urlparse(server.url).netloc:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    context.route("**/*", only_the_server)
    page = context.new_page()
    problems.watch(page)
    try:
        page.goto(server.url + "/docs")
        page.locator(".swagger-ui .info .title", has_text="dashrag retrieval service").wait_for(timeout=20_000)
        page.locator(".opblock-summary-path", has_text="/retrieve").first.wait_for()
        assert elsewhere == [] and problems.found == [], (elsewhere, problems.found)
    finally:
        context.close()
