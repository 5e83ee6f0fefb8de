"""One ``top_k`` rule for every retriever: a positive integer (core/ask.py's ``check_top_k`` for ``retrieve``,
core/params.py's ``top_k_field`` for configs). Every registered retriever component is built on the example
corpus (its outside services are real loopback servers) and asked for "5", 2.7, True, 5.0, 0 and -1 through
``retrieve``, ``retrieve_batch`` and ``stream_batch``: each is a QueryError before any work (no request reaches a
server), and a good ``top_k`` is honoured."""

from __future__ import annotations

import pytest

import dashrag
from dashrag.core.registry import all_components
from dashrag.errors import ConfigError, QueryError
from tests.conftest import EXAMPLE_CORPUS
from tests.llm.openai_server import ScriptedOpenAIServer
from tests.retrievers.rerank_server import RerankServer
from tests.retrievers.rerank_services import CohereServer, JinaServer

BAD = ["5", 2.7, True, 5.0, 0, -1]
BM25 = {"component": "BM25Retriever", "params": {"top_k": 6}}
TFIDF = {"component": "TFIDFRetriever", "params": {"top_k": 6}}
ONNX = {"component": "MiniLMOnnxEmbedding", "params": {"max_seq_length": 128}}
KEY = {"component": "EnvCredential", "params": {"var": "DASHRAG_TEST_TOP_K_KEY"}}


@pytest.fixture(scope="module")
def servers():
    with RerankServer() as tei, CohereServer() as cohere, JinaServer() as jina, ScriptedOpenAIServer() as llm:
        yield {"HttpReranker": tei, "CohereReranker": cohere, "JinaReranker": jina, "AgenticRerankerRetriever": llm}


def configs(servers: dict, cross_encoder: str) -> dict[str, dict]:
    """A small working tree per registered retriever component."""
    def remote(name: str) -> dict:
        return {"component": name, "params": {"api_base": servers[name].url, "credential": KEY,
                                              "api_key_required": False, "children": [BM25], "fetch_k": 6}}
    return {
        "AgenticRerankerRetriever": {"component": "AgenticRerankerRetriever", "params": {
            "children": [BM25], "llm_model": {"component": "LiteLLMModel", "params": {
                "model": "openai/test-model", "api_base": servers["AgenticRerankerRetriever"].api_base,
                "credential": KEY}}}},
        "BM25Retriever": BM25,
        "BooleanQueryRetriever": {"component": "BooleanQueryRetriever", "params": {
            "children": [{"component": "DenseEmbeddingRetriever", "params": {"embedding": ONNX}}]}},
        "CohereReranker": remote("CohereReranker"),
        "CrossEncoderRetriever": {"component": "CrossEncoderRetriever", "params": {
            "model": cross_encoder, "children": [BM25], "top_k": 3}},
        "DenseEmbeddingRetriever": {"component": "DenseEmbeddingRetriever", "params": {"embedding": ONNX}},
        "HttpReranker": remote("HttpReranker"),
        "JinaReranker": remote("JinaReranker"),
        "MMRRerankerRetriever": {"component": "MMRRerankerRetriever", "params": {
            "children": [TFIDF], "embedding": ONNX, "top_k": 3}},
        "ParallelRetriever": {"component": "ParallelRetriever", "params": {"children": [BM25, TFIDF]}},
        "RerankCascadeRetriever": {"component": "RerankCascadeRetriever", "params": {
            "fast": BM25, "precise": TFIDF, "stage1_top_n": 6, "top_k": 3}},
        "SequentialRetriever": {"component": "SequentialRetriever", "params": {
            "children": [BM25, {"component": "TFIDFRetriever", "params": {"top_k": 3}}]}},
        "TFIDFRetriever": TFIDF,
    }


#: the query each asks; the boolean component's is an expression (a semantic clause)
QUERIES = {"BooleanQueryRetriever": '"rank fusion"'}
RETRIEVERS = sorted(name for name, cls in all_components() if cls.META.kind == "retriever")
NEEDS_A_MODEL = {"CrossEncoderRetriever"}


def test_every_registered_retriever_is_in_this_test(servers):
    assert sorted(configs(servers, "unused")) == RETRIEVERS


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in NEEDS_A_MODEL else n
                                  for n in RETRIEVERS])
def test_every_retriever_refuses_a_top_k_that_is_not_a_positive_integer(name, servers, request, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv(KEY["params"]["var"], "sk-top-k-test")
    model = str(request.getfixturevalue("cross_encoder_dir")) if name in NEEDS_A_MODEL else "unused"
    tree = dashrag.build(configs(servers, model)[name], EXAMPLE_CORPUS, tmp_path)
    query = QUERIES.get(name, "rank fusion")
    asked = {n: len(s.requests) for n, s in servers.items()}
    for bad in BAD:
        with pytest.raises(QueryError, match="top_k must be a positive integer"):
            tree.retrieve(query, top_k=bad)
        with pytest.raises(QueryError, match="top_k must be a positive integer"):
            tree.retrieve_batch([query], top_k=bad)
        with pytest.raises(QueryError, match="top_k must be a positive integer"):
            list(tree.stream_batch([query], top_k=bad))
    assert {n: len(s.requests) for n, s in servers.items()} == asked  # refused before any request
    if name != "AgenticRerankerRetriever":  # the LLM would need a scripted answer; the rule is the point here
        chunks, _ = tree.retrieve(query, top_k=2)
        assert 1 <= len(chunks) <= 2


@pytest.mark.parametrize("bad", BAD[:3] + [BAD[4], BAD[5]])
def test_a_config_refuses_a_top_k_that_is_not_a_positive_integer(bad):
    with pytest.raises(ConfigError, match="params.top_k"):
        dashrag.validate_and_transform({"component": "SequentialRetriever", "params": {
            "children": [{"component": "BM25Retriever", "params": {"top_k": bad}}, TFIDF]}})
