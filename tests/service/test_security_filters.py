"""Filters over HTTP are bounded and checked before any engine sees them (issue 38, docs/security.md).

The probe's filters (under the 1 MiB body limit): ``$or`` of 50,000 terms, ``$and`` of 40,000, ``$in``
of 140,000 values cost seconds of CPU each and starved ``/health``; a 400-digit integer was a 500; a NUL
or a lone surrogate was a 503 on PostgreSQL and Edge; a key given twice in a document was last-key-wins.
Each is now a 422 naming the reason, on both query routes."""

from __future__ import annotations

import json

import pytest

QUERY_ROUTES = [("/trees/kw/query", {"query": "retrieval"}),
                ("/retrieve", {"query": "retrieval", "collection_name": "kw"})]


def problem(answer) -> str:
    assert answer.status_code == 422, answer.text
    return json.dumps(answer.json()["detail"], ensure_ascii=True)


def post_raw(client, route: str, body: dict, filter_text: str):
    """The body with ``filters`` written as given (escapes, a huge integer: what a client can send)."""
    text = json.dumps(body)[:-1] + f', "filters": {filter_text}}}'
    assert len(text) < 1 << 20  # under the request limit: the bound is the filter's own
    return client.post(route, content=text.encode(), headers={"Content-Type": "application/json"})


PROBES = {
    "an $or of 50,000 terms": ('{"$or": [' + ",".join(['{"year": 1}'] * 50_000) + "]}", "more than 1,000 terms"),
    "an $and of 40,000 terms": ('{"$and": [' + ",".join(['{"year": 1}'] * 40_000) + "]}", "more than 1,000 terms"),
    "an $in of 140,000 values": ('{"year": {"$in": [' + ",".join(["1"] * 140_000) + "]}}", "more than 10,000 values"),
}


@pytest.mark.parametrize("route, body", QUERY_ROUTES)
@pytest.mark.parametrize("probe", PROBES)
def test_a_filter_beyond_the_size_bounds_is_a_422_naming_the_bound(client, route, body, probe):
    filter_text, bound = PROBES[probe]
    assert bound in problem(post_raw(client, route, body, filter_text))


@pytest.mark.parametrize("route, body", QUERY_ROUTES)
def test_the_largest_filter_within_the_bounds_is_answered(client, route, body):
    terms = ",".join(json.dumps({"year": y}) for y in range(997))  # + "$or", "lang", "$in": 1,000 terms
    within = '{"$or": [' + terms + '], "lang": {"$in": ' + json.dumps([f"l{i}" for i in range(10_000)]) + "}}"
    assert post_raw(client, route, body, within).status_code == 200


@pytest.mark.parametrize("route, body", QUERY_ROUTES)
@pytest.mark.parametrize("filter_text, reason", [
    ('{"year": ' + "9" * 400 + "}", "out of range"),
    ('{"year": {"$in": [1, -' + "9" * 400 + "]}}", "out of range"),
    ('{"lang": "en\\u0000"}', "NUL"),
    ('{"lang": "\\ud800"}', "lone surrogate"),
    ('{"lang\\u0000": "en"}', "NUL"),
])
def test_a_value_no_engine_can_compare_is_a_422_with_the_reason(client, route, body, filter_text, reason):
    assert reason in problem(post_raw(client, route, body, filter_text))


def test_a_document_with_a_key_given_twice_is_refused(trees_copy):
    from tests.service.conftest import make_client

    body = b'{"documents": [{"id": "a", "id": "b", "text": "which id?"}]}'
    with make_client(trees_dir=trees_copy) as client:
        answer = client.post("/trees/kw/documents", content=body, headers={"Content-Type": "application/json"})
        listed = client.get("/trees/kw/documents", params={"limit": 500}).json()
    assert "appears twice" in problem(answer) and "id" in problem(answer)
    assert not {"a", "b"} & {d["id"] for d in listed["documents"]}
