"""POST /retrieve through HTTP (the in-process ASGI client): every step of the reference pipeline."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from dashrag.service.collections import RetrievedChunk, TreeCollection
from dashrag.service.models import RetrieveResponse
from tests.service.conftest import make_client

QUERY = "how does BM25 saturate term frequency"


def raw_search(trees_dir, name: str, query: str, limit: int = 15) -> list[RetrievedChunk]:
    """The collection's own calibrated answer, in process: what the gates are applied to."""
    return TreeCollection(trees_dir / name).search(query, limit)


def retrieve(client, **body):
    return client.post("/retrieve", json={"collection_name": "kw", **body})


# -- step 1: validation -----------------------------------------------------------------
@pytest.mark.parametrize("body", [
    {"query": "", "collection_name": "kw"},
    {"query": "  \t\n ", "collection_name": "kw"},
    {"collection_name": "kw"},
    {"query": "bm25"},
    {"query": "bm25", "collection_name": "kw", "limit": 0},
    {"query": "bm25", "collection_name": "kw", "limit": 51},
    {"query": "bm25", "collection_name": "kw", "limit": "many"},
    {"query": 7, "collection_name": "kw"},
    ["bm25"],
])
def test_an_empty_query_or_a_malformed_body_is_422(client, body):
    answer = client.post("/retrieve", json=body)
    assert answer.status_code == 422, answer.text
    assert isinstance(answer.json()["detail"], list)


def test_a_body_that_is_not_json_is_422_not_400(client):
    answer = client.post("/retrieve", content=b'{"query": "bm25", ', headers={"content-type": "application/json"})
    assert answer.status_code == 422


# -- step 2: collections ------------------------------------------------------------------
def test_no_existing_collection_is_404_naming_it(client):
    answer = client.post("/retrieve", json={"query": "bm25", "collection_name": "nope", "user_collection_name": "nix"})
    assert answer.status_code == 404
    assert "'nope'" in answer.json()["detail"] and "'nix'" in answer.json()["detail"]


def test_a_missing_user_collection_is_skipped_when_the_main_one_exists(client):
    answer = retrieve(client, query=QUERY, user_collection_name="nope")
    assert answer.status_code == 200 and answer.json()["context_chunks"]


def test_both_collections_are_searched_and_merged_by_retrieval_score(trees_dir):
    with make_client(trees_dir=trees_dir, retrieval_score_floor=0.0, confidence_threshold=0.0,
                     budget_simple=100_000, budget_medium=100_000) as client:
        query = "BM25 ranking of documents"
        answer = retrieve(client, query=query, user_collection_name="scifact", limit=5).json()
    expected = raw_search(trees_dir, "kw", query, 5) + raw_search(trees_dir, "scifact", query, 5)
    expected.sort(key=lambda c: -c.retrieval_score)
    got = [(c["collection_name"], c["chunk_id"], c["retrieval_score"]) for c in answer["context_chunks"]]
    assert got == [(c.collection_name, c.chunk_id, c.retrieval_score) for c in expected]
    assert {"kw", "scifact"} == {c[0] for c in got}


# -- the answer's shape ---------------------------------------------------------------------
def test_a_chunk_carries_its_ids_collection_and_both_scores(client):
    answer = retrieve(client, query=QUERY).json()
    chunk = answer["context_chunks"][0]
    assert set(chunk) == {"chunk_id", "text", "source_id", "collection_name", "retrieval_score", "rerank_score",
                          "metadata"}
    assert chunk["collection_name"] == "kw" and chunk["source_id"] == "bm25.md"
    assert 0.0 <= chunk["retrieval_score"] <= 1.0
    assert answer["reranker"] == "none" and chunk["rerank_score"] == chunk["retrieval_score"]


# -- step 7: the retrieval floor --------------------------------------------------------------
def test_the_floor_drops_exactly_the_chunks_scoring_below_it(trees_dir):
    raw = raw_search(trees_dir, "kw", QUERY)
    floor = statistics.median(c.retrieval_score for c in raw)
    with make_client(trees_dir=trees_dir, retrieval_score_floor=floor, confidence_threshold=0.0,
                     budget_simple=100_000, budget_medium=100_000) as client:
        got = retrieve(client, query=QUERY).json()["context_chunks"]
    kept = [c.chunk_id for c in raw if c.retrieval_score >= floor]
    assert 0 < len(kept) < len(raw)
    assert [c["chunk_id"] for c in got] == kept


class ScorelessEverySecond:
    """A second kind of collection through the plug-in protocol: a real tree, every second chunk unscored
    (as a store returning chunks without a score would)."""

    def __init__(self, tree: TreeCollection, name: str):
        self.tree, self.name = tree, name

    def exists(self) -> bool:
        return True

    def search(self, query: str, limit: int, restriction=None) -> list[RetrievedChunk]:
        chunks = self.tree.search(query, limit, restriction)
        return [replace(c, collection_name=self.name, retrieval_score=None if i % 2 else c.retrieval_score)
                for i, c in enumerate(chunks)]


@pytest.mark.slow
def test_a_missing_retrieval_score_counts_as_zero(trees_dir):
    for floor, expect_unscored in ((0.0, True), (0.01, False)):
        with make_client(trees_dir=trees_dir, retrieval_score_floor=floor, confidence_threshold=0.0,
                         budget_simple=100_000, budget_medium=100_000) as client:
            registry = client.app.state.service.registry
            registry.add(ScorelessEverySecond(registry.tree("kw"), "partly"))
            got = client.post("/retrieve", json={"query": QUERY, "collection_name": "partly"}).json()
        unscored = [c for c in got["context_chunks"] if c["retrieval_score"] is None]
        assert bool(unscored) is expect_unscored
        if unscored:  # sorted as 0.0: after every scored chunk
            assert got["context_chunks"][-len(unscored):] == unscored


# -- step 9: the confidence filter -------------------------------------------------------------
def test_the_confidence_filter_drops_exactly_the_chunks_reranked_below_it(trees_dir):
    raw = raw_search(trees_dir, "kw", QUERY)
    threshold = statistics.median(c.retrieval_score for c in raw)
    with make_client(trees_dir=trees_dir, retrieval_score_floor=0.0, confidence_threshold=threshold,
                     budget_simple=100_000, budget_medium=100_000) as client:
        got = retrieve(client, query=QUERY, trace=True).json()
    assert [c["chunk_id"] for c in got["context_chunks"]] == [c.chunk_id for c in raw if c.retrieval_score >= threshold]
    step = next(n for n in got["trace"]["children"] if n["component"] == "confidence")
    assert step["selection"]["dropped"] == sum(c.retrieval_score < threshold for c in raw) > 0


def test_an_empty_context_is_a_200_with_low_confidence(client):
    answer = retrieve(client, query="zyxwvut qqqqq")
    assert answer.status_code == 200
    assert answer.json() | {"trace": None} == {"context_chunks": [], "citations": [], "cited_places": [],
                                               "low_confidence": True, "reranker": "none", "trace": None,
                                               "warnings": [],
                                               "empty_reason": "the collections returned no chunks for this query"}


def test_low_confidence_is_false_when_a_chunk_is_kept(client):
    assert retrieve(client, query=QUERY).json()["low_confidence"] is False


# -- steps 4 and 10: complexity budget, packing, citations --------------------------------------
@pytest.mark.slow
def test_packing_keeps_the_top_chunk_alone_when_it_is_over_a_tiny_budget(trees_dir):
    with make_client(trees_dir=trees_dir, retrieval_score_floor=0.0, confidence_threshold=0.0,
                     budget_simple=10) as client:
        got = retrieve(client, query="bm25 saturation").json()
        full = retrieve(client, query="bm25 saturation", limit=1).json()
    assert len(got["context_chunks"]) == 1 and len(got["context_chunks"][0]["text"]) > 40
    assert got["context_chunks"] == full["context_chunks"]


def test_packing_stays_within_the_class_budget(trees_dir):
    with make_client(trees_dir=trees_dir, retrieval_score_floor=0.0, confidence_threshold=0.0,
                     budget_simple=700) as client:
        answer = retrieve(client, query="bm25 saturation", trace=True).json()
        everything = retrieve(client, query="bm25 saturation", limit=50).json()
    texts = [c["text"] for c in answer["context_chunks"]]
    assert 1 < len(texts) and sum(map(len, texts)) <= 700 * 4
    assert answer["context_chunks"] == everything["context_chunks"][:len(texts)]
    assembled = next(n for n in answer["trace"]["children"] if n["component"] == "assemble")
    assert assembled["selection"]["budget_chars"] == 2800


@pytest.mark.parametrize("query, level, budget", [
    ("bm25 saturation", "simple", 512),
    ("compare bm25 versus dense retrieval", "medium", 1024),
    (" ".join(["retrieval"] * 29), "complex", 2048),
])
def test_the_complexity_class_of_the_original_query_sets_the_budget(client, query, level, budget):
    trace = retrieve(client, query=query, trace=True).json()["trace"]
    step = next(n for n in trace["children"] if n["component"] == "complexity")
    assert (step["selection"]["complexity"], step["selection"]["token_budget"]) == (level, budget)


def test_citations_are_the_sorted_source_ids_of_the_kept_chunks(trees_dir):
    with make_client(trees_dir=trees_dir, retrieval_score_floor=0.0, confidence_threshold=0.0,
                     budget_simple=100_000) as client:
        answer = retrieve(client, query="retrieval", user_collection_name="scifact").json()
    sources = [c["source_id"] for c in answer["context_chunks"]]
    assert len(set(sources)) > 1
    assert answer["citations"] == sorted(set(sources))


def test_the_trace_holds_every_step_in_order_and_the_tree_trace(client):
    trace = retrieve(client, query=QUERY, trace=True).json()["trace"]
    assert [n["component"] for n in trace["children"]] == [
        "rewrite", "complexity", "search", "retrieval_floor", "rerank", "confidence", "assemble"]
    search = trace["children"][2]
    assert search["children"][0]["component"] == "search:kw"
    assert search["children"][0]["children"][0]["component"] == "BM25Retriever"


def test_server_timing_names_every_step_with_the_traces_own_times(client):
    answer = retrieve(client, query=QUERY, trace=True)
    timing = dict(metric.split(";dur=") for metric in answer.headers["server-timing"].split(", "))
    trace = answer.json()["trace"]
    assert list(timing) == [n["component"] for n in trace["children"]] + ["total"]
    assert {step: float(ms) for step, ms in timing.items()} == {
        **{n["component"]: n["elapsed_ms"] for n in trace["children"]}, "total": trace["elapsed_ms"]}


def test_server_timing_is_sent_without_a_trace_too(client):
    steps = [metric.split(";")[0] for metric in retrieve(client, query=QUERY).headers["server-timing"].split(", ")]
    assert steps == ["rewrite", "complexity", "search", "retrieval_floor", "rerank", "confidence", "assemble", "total"]


def test_no_trace_unless_asked(client):
    assert retrieve(client, query=QUERY).json()["trace"] is None


def test_the_answer_is_exactly_the_response_models_json(client):
    """The route serialises the answer itself (one worker-thread hand-off, not FastAPI's two)."""
    answer = retrieve(client, query=QUERY, trace=True)
    assert answer.headers["content-type"] == "application/json"
    assert answer.content == RetrieveResponse.model_validate_json(answer.content).model_dump_json().encode()


def test_the_openapi_document_still_names_the_response_model_for_the_200(client):
    documented = client.get("/openapi.json").json()["paths"]["/retrieve"]["post"]["responses"]["200"]
    assert documented["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/RetrieveResponse"}


def test_a_body_that_is_not_utf8_is_422_not_400(client):
    answer = client.post("/retrieve", content=b'\xff\xfe{"q', headers={"content-type": "application/json"})
    assert answer.status_code == 422 and answer.json()["detail"][0]["type"] == "json_invalid"


def test_a_wrong_method_is_405_naming_every_method_of_the_path(client):
    answer = client.put("/trees")
    assert answer.status_code == 405 and answer.headers["allow"] == "GET, POST"
