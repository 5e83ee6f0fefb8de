"""Retriever.stream_batch: answers handed out in order as they are made, finished work kept when a query fails.

Real components on the shipped corpus: a TF-IDF leaf, and an agentic reranker over BM25
whose model is the scripted loopback server (tests/llm/openai_server.py), the only way
to make a real tree fail part-way through a batch.
"""

from __future__ import annotations

import pytest

import dashrag
from dashrag.errors import BatchQueryError, LLMBackendError
from tests.conftest import EXAMPLE_CORPUS
from tests.llm.openai_server import ScriptedOpenAIServer, http_error, select

QUERIES = ["the ranking of documents", "the vectors of a model", "fusion of the rankings", "the chunks of a document",
           "the words of a query"]  # common words: every query has more candidates than top_k, so the model is asked
SMALL_CHUNKS = {"component": "TokenChunker", "params": {"chunk_size": 20, "chunk_overlap": 0}}


def agentic_tree(server: ScriptedOpenAIServer) -> dict:
    return {"component": "AgenticRerankerRetriever", "params": {
        "k1": 6, "top_k": 2, "children": [{"component": "BM25Retriever", "params": {}}],
        "llm_model": {"component": "LiteLLMModel", "params": {
            "model": "openai/test-model", "api_base": server.api_base, "timeout": 5.0,
            "credential": {"component": "EnvCredential", "params": {"var": "DASHRAG_UNSET_STREAM_KEY"}}}}}}


@pytest.fixture
def llm_server():
    with ScriptedOpenAIServer() as server:
        yield server


def test_stream_batch_yields_what_retrieve_batch_answers_in_order(tmp_path):
    retriever = dashrag.build({"component": "TFIDFRetriever"}, EXAMPLE_CORPUS, tmp_path / "w")
    streamed = list(retriever.stream_batch(QUERIES))
    batched = retriever.retrieve_batch(QUERIES)
    assert [i for i, _, _ in streamed] == list(range(len(QUERIES)))
    assert [chunks for _, chunks, _ in streamed] == [chunks for chunks, _ in batched]
    assert [node["query"] for _, _, node in streamed] == QUERIES


def test_a_tree_with_an_llm_stage_streams_one_query_at_a_time_and_names_the_failing_one(tmp_path, llm_server):
    retriever = dashrag.build(agentic_tree(llm_server), EXAMPLE_CORPUS, tmp_path / "w", chunker=SMALL_CHUNKS)
    llm_server.script(select(1), select(2), http_error(500, "model crashed"))
    answers = retriever.stream_batch(QUERIES, query_ids=[f"q{i}" for i in range(1, 6)])
    delivered = [next(answers), next(answers)]
    assert len(llm_server.requests) == 2  # each answer was handed out before the next query was asked
    with pytest.raises(BatchQueryError) as caught:
        next(answers)
    error = caught.value
    assert [i for i, _, _ in delivered] == [0, 1] and all(len(chunks) == 1 for _, chunks, _ in delivered)
    assert (error.position, error.total, error.query_id) == (3, 5, "q3")
    assert isinstance(error.cause, LLMBackendError) and "HTTP 500" in str(error)
    assert str(error).startswith("query 'q3' (3 of 5) failed; the 2 answers before it were delivered: LLM backend")
    assert len(llm_server.requests) == 3  # nothing asked again


def test_a_failing_block_is_answered_again_one_query_at_a_time_to_keep_what_answers(tmp_path, llm_server):
    retriever = dashrag.build(agentic_tree(llm_server), EXAMPLE_CORPUS, tmp_path / "w", chunker=SMALL_CHUNKS)
    retriever.stream_block = 4  # as a cheap component's block: four queries per retrieve_batch call
    llm_server.script(select(1), select(2), http_error(500), select(1), select(2), http_error(500))
    answers = retriever.stream_batch(QUERIES)
    delivered = [next(answers), next(answers)]
    with pytest.raises(BatchQueryError) as caught:
        next(answers)
    assert [i for i, _, _ in delivered] == [0, 1] and caught.value.query_id == "3"  # 1-based position: no ids given
    assert len(llm_server.requests) == 6


def test_a_block_whose_failure_does_not_repeat_is_delivered_whole(tmp_path, llm_server):
    retriever = dashrag.build(agentic_tree(llm_server), EXAMPLE_CORPUS, tmp_path / "w", chunker=SMALL_CHUNKS)
    retriever.stream_block = 2
    llm_server.script(http_error(503), select(1), select(1), select(2), select(1), select(1), select(1))
    assert [i for i, _, _ in retriever.stream_batch(QUERIES)] == [0, 1, 2, 3, 4]
