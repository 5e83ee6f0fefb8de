"""POST /retrieve refuses unknown keys by name and says why an answer is empty without a trace."""

from __future__ import annotations

from tests.service.conftest import make_client

QUERY = "how does BM25 saturate term frequency"


def test_an_unknown_key_is_a_422_naming_the_key(client):
    answer = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw", "top_k": 1})
    assert answer.status_code == 422
    [issue] = answer.json()["detail"]
    assert issue["loc"] == ["body", "top_k"] and "unknown key 'top_k'" in issue["msg"]


def test_an_answer_emptied_by_the_floor_names_the_floor_and_the_best_score(trees_dir):
    with make_client(trees_dir=trees_dir, retrieval_score_floor=0.999) as client:
        best = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw", "trace": True}).json()
        answer = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw"}).json()
    search = next(n for n in best["trace"]["children"] if n["component"] == "search")
    top = max(c["retrieval_score"] for c in search["output"])
    assert answer["context_chunks"] == [] and answer["trace"] is None
    assert "retrieval floor 0.999" in answer["empty_reason"] and f"{top:.4g}" in answer["empty_reason"]


def test_an_answer_emptied_by_the_confidence_threshold_names_it(trees_dir):
    with make_client(trees_dir=trees_dir, retrieval_score_floor=0.0, confidence_threshold=0.999) as client:
        answer = client.post("/retrieve", json={"query": QUERY, "collection_name": "kw"}).json()
    assert answer["context_chunks"] == [] and "confidence threshold 0.999" in answer["empty_reason"]


def test_no_chunk_found_says_so(client):
    answer = client.post("/retrieve", json={"query": "zyxwvut qqqqq", "collection_name": "kw"}).json()
    assert answer["empty_reason"] == "the collections returned no chunks for this query"


def test_a_kept_chunk_means_no_empty_reason(client):
    assert client.post("/retrieve", json={"query": QUERY, "collection_name": "kw"}).json()["empty_reason"] is None
