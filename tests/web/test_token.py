"""The page against a service that wants a bearer token: refused without it, served with it, the token kept in
the tab's sessionStorage only."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.web.conftest import serving, watched_page

TOKEN_VAR = "DASHRAG_WEB_TEST_TOKEN"
TOKEN = "web-test-token-0b7e"
API_CALLS = ("/components", "/schemas", "/presets", "/trees")  # what the page asks for when it opens


@pytest.fixture(scope="module")
def guarded_url(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("guarded"), env={"RAG_AUTH_TOKEN_VAR": TOKEN_VAR, TOKEN_VAR: TOKEN}) as url:
        yield url


@pytest.fixture()
def guarded(browser, guarded_url, problems):
    with watched_page(browser, problems) as opened:
        yield opened


def refusal(page):
    shown = page.locator('.failure[data-status="401"]').first
    shown.wait_for()
    return shown


def test_without_the_token_the_page_says_to_enter_it(guarded, guarded_url, problems):
    for path in API_CALLS:
        problems.expect(401, path)
    guarded.goto(guarded_url + "/")
    assert "asks for an access token" in refusal(guarded).inner_text()
    assert "auth: missing or wrong bearer token" in refusal(guarded).inner_text()


def test_a_wrong_token_is_refused_and_the_right_one_serves_the_page(guarded, guarded_url, problems):
    for path in API_CALLS:
        problems.expect(401, path)
    sent: list[str | None] = []  # the Authorization header of each GET /components
    guarded.on("request", lambda r: r.url.endswith("/components") and sent.append(r.headers.get("authorization")))
    guarded.goto(guarded_url + "/")
    guarded.get_by_label("Access token").fill("wrong-token")
    guarded.get_by_role("button", name="Use token").click()
    refusal(guarded)
    guarded.get_by_label("Access token").fill(TOKEN)
    guarded.get_by_role("button", name="Use token").click()
    guarded.get_by_role("button", name="Choose the root component").wait_for()
    expect(guarded.locator(".failure")).to_have_count(0)  # the wrong token's refusal goes as the page re-renders
    assert sent == [None, "Bearer wrong-token", f"Bearer {TOKEN}"]
    stored = guarded.evaluate("() => [sessionStorage.getItem('dashrag-token'), JSON.stringify(localStorage)]")
    assert stored[0] == TOKEN and TOKEN not in stored[1]
    # every call carries it: the presets and the saved trees load, the server agrees the tree is valid
    guarded.get_by_label("Presets").select_option("keyword")
    guarded.get_by_role("button", name="Load preset").click()
    guarded.get_by_text("The tree is valid").wait_for()
