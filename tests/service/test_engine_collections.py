"""The service on the engines, over HTTP: Qdrant collections served directly next to saved trees (the reference
payload, the query embedded by the configured model), and every engine failure a 503 naming engine and object."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest
from sqlalchemy import create_engine, text

import dashrag
from dashrag.engines.local_postgres import free_port
from dashrag.errors import EngineError
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS
from tests.fixtures.postgres import local_postgres
from tests.service.conftest import ONNX, LoopbackServer

OPEN = {"retrieval_score_floor": 0.0, "confidence_threshold": 0.0}  # keep every chunk: the ranking is compared


def retrieve(server: LoopbackServer, collection: str, query: str) -> httpx.Response:
    return httpx.post(f"{server.url}/retrieve", json={"query": query, "collection_name": collection, "limit": 5},
                      timeout=60)


def assert_engine_503(response: httpx.Response, *fragments: str) -> str:
    detail = response.json()["detail"]
    assert response.status_code == 503, (response.status_code, detail)
    assert all(f in detail for f in fragments), detail
    assert "Traceback" not in detail and 'File "' not in detail
    return detail


def test_a_qdrant_collection_is_served_next_to_the_trees(papers, trees_dir):
    storage, documents, vectors, model = papers
    query = "how are term frequencies saturated in BM25 scoring"
    cosines = vectors @ model.embed_queries([query])[0]
    expected = [documents[i][0] for i in np.argsort(-cosines)[:5]]
    settings = ServiceSettings(trees_dir=trees_dir, qdrant=str(storage), qdrant_embedding=ONNX, **OPEN)
    with LoopbackServer(create_app(settings)) as server:
        answer = retrieve(server, "papers", query)
        assert answer.status_code == 200, answer.text
        chunks = answer.json()["context_chunks"]
        found = [c["source_id"] for c in chunks]  # the answer is packed into a token budget: a prefix survives
        assert len(found) >= 2 and found == expected[:len(found)]
        assert chunks[0]["chunk_id"] == f"{expected[0]}#0" and chunks[0]["collection_name"] == "papers"
        assert chunks[0]["text"] == dict(documents)[expected[0]]
        assert chunks[0]["retrieval_score"] == pytest.approx(float(np.max(cosines)), abs=1e-4)
        tree = retrieve(server, "kw", query)  # the saved trees are still served beside it
        assert tree.status_code == 200 and tree.json()["context_chunks"]
        assert retrieve(server, "dashrag_records", query).status_code == 404


def test_a_collection_of_another_dimension_is_a_503_naming_qdrant_and_the_collection(papers):
    settings = ServiceSettings(qdrant=str(papers[0]), qdrant_embedding=ONNX)
    with LoopbackServer(create_app(settings)) as server:
        assert_engine_503(retrieve(server, "tiny", "anything"), "Qdrant collection 'tiny'", "8-dimensional", "384")


def test_an_unreachable_qdrant_is_a_503_naming_the_collection_but_not_the_operators_url():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    settings = ServiceSettings(qdrant=url, qdrant_embedding=ONNX, qdrant_collections=["papers"])
    with LoopbackServer(create_app(settings)) as server:
        detail = assert_engine_503(retrieve(server, "papers", "anything"), "Qdrant collection 'papers' at <qdrant>",
                                   "failed")
        assert url not in detail and url.split("//")[1] not in detail  # docs/security.md: no internal URL


def test_the_url_a_503_hides_is_in_the_servers_log(caplog):
    url = f"http://127.0.0.1:{free_port()}"
    settings = ServiceSettings(qdrant=url, qdrant_embedding=ONNX, qdrant_collections=["papers"])
    with caplog.at_level("WARNING", logger="dashrag.service.app"), LoopbackServer(create_app(settings)) as server:
        assert retrieve(server, "papers", "anything").status_code == 503
    assert any(f"Qdrant collection 'papers' at {url}" in r.getMessage() for r in caplog.records), caplog.text


def test_a_refused_qdrant_key_is_a_503_that_never_shows_the_key(refusing_qdrant, monkeypatch):
    monkeypatch.setenv("DASHRAG_TEST_SERVED_KEY", "s3cret-served-key")
    settings = ServiceSettings(qdrant=refusing_qdrant, qdrant_embedding=ONNX, qdrant_collections=["papers"],
                               qdrant_api_key_var="DASHRAG_TEST_SERVED_KEY")
    with LoopbackServer(create_app(settings)) as server:
        response = retrieve(server, "papers", "anything")
        detail = assert_engine_503(response, "Qdrant collection 'papers'", "refused the API key")
        assert "s3cret-served-key" not in detail and "s3cret-served-key" not in response.text


def test_serving_every_collection_of_an_unreachable_qdrant_refuses_to_start():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EngineError, match=rf"Qdrant server at {url}: listing collections failed"):
        create_app(ServiceSettings(qdrant=url, qdrant_embedding=ONNX))


def keyword_on_postgres(url: str, table: str) -> dict:
    return {"component": "BM25Retriever", "params": {"top_k": 5, "index": {
        "component": "PgKeywordIndex", "params": {"url": url, "table": table}}}}


def test_a_tree_whose_table_was_edited_is_a_503_on_both_query_routes(pg_url, tmp_path):
    trees = tmp_path / "trees"
    dashrag.build(keyword_on_postgres(pg_url, "served_edited"), EXAMPLE_CORPUS, tmp_path / "work",
                  overwrite=True).save(trees / "edited")
    engine = create_engine(pg_url)
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM served_edited_terms WHERE term_id = 0"))
    engine.dispose()
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees))) as server:
        assert_engine_503(retrieve(server, "edited", "chunk overlap"), "PostgreSQL table 'served_edited'",
                          "modified 1 time")
        query = httpx.post(f"{server.url}/trees/edited/query", json={"query": "chunk overlap"}, timeout=60)
        assert_engine_503(query, "load: tree 'edited'", "PostgreSQL table 'served_edited'")


@pytest.mark.slow
def test_a_tree_whose_server_is_down_is_a_503_naming_the_table_but_not_the_url(tmp_path):
    trees = tmp_path / "trees"
    with local_postgres() as url:  # a server that is stopped before the service starts
        dashrag.build(keyword_on_postgres(url, "gone"), EXAMPLE_CORPUS, tmp_path / "work").save(trees / "gone")
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees))) as server:
        detail = assert_engine_503(retrieve(server, "gone", "chunk overlap"), "PostgreSQL table 'gone' at <endpoint>",
                                   "failed")
        assert url not in detail and url.split("@")[0] not in detail  # neither the URL nor its user
        listed = httpx.get(f"{server.url}/trees", timeout=30).json()
        assert "gone" not in json.dumps(listed)  # not loaded: only its error is served
