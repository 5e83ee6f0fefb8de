"""The query tab's list of saved trees: Delete asks first (issue 39), in the real server and Chromium."""

from __future__ import annotations

import httpx

from tests.web.conftest import build_tree, preset


def saved(server) -> set[str]:
    return {tree["name"] for tree in httpx.get(f"{server.url}/trees", timeout=60).json()}


def test_delete_names_the_tree_and_its_documents_and_deletes_only_when_confirmed(page, server):
    build_tree(server.url, "kept-then-gone", preset("keyword"))
    build_tree(server.url, "kept-then-gone-neighbour", preset("keyword"))
    page.get_by_role("button", name="Query saved trees").click()
    row = page.locator('li[data-tree="kept-then-gone"]')
    row.get_by_role("button", name="Delete", exact=True).click()
    question = row.locator(".delete-confirm")
    assert "“kept-then-gone” and its 8 documents?" in question.inner_text()
    cancel = row.get_by_role("button", name="Cancel")
    assert cancel.evaluate("button => document.activeElement === button")  # Enter now keeps the tree
    page.keyboard.press("Escape")
    assert question.count() == 0 and "kept-then-gone" in saved(server)

    row.get_by_role("button", name="Delete", exact=True).click()
    row.get_by_role("button", name="Delete kept-then-gone").click()
    row.wait_for(state="detached")
    assert "kept-then-gone" not in saved(server) and "kept-then-gone-neighbour" in saved(server)
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "Saved trees"  # not the neighbour's Delete
