"""Metadata filters are pre-filters in every composite: for random metadata and random filters, each composite
returns exactly its brute-force reference (``filter_reference.reference``: its own combination step over its
children's filter-then-rank answers), documents and scores: Parallel with every fusion, Sequential, MMR (over a
keyword child and over a hybrid), the HTTP reranker (a loopback /rerank server), the LLM reranker (a loopback
OpenAI-protocol server, through litellm) and the cross-encoder (MODELS.md's offline one: slow). The boolean query
takes the filter as its scope, what the same expression AND-ed with the filter's category clauses answers.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.core.restriction import Restriction
from dashrag.documents.corpus import Corpus
from dashrag.fusion.strategies import STRATEGY_NAMES
from tests.llm.openai_server import ScriptedOpenAIServer, select
from tests.retrievers.filter_reference import assert_same_answer, reference
from tests.retrievers.rerank_server import RerankServer
from tests.retrievers.test_metadata_filters import (
    DOCUMENTS,
    FAST_ONNX,
    LANGS,
    QUERIES,
    TAGS,
    bm25,
    dense,
    filters,
    matching_documents,
    tfidf,
)

KEY_VAR = "DASHRAG_TEST_FILTER_LLM_KEY"
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def hybrid(strategy: str = "rrf", top_k: int = 8) -> dict:
    return {"component": "ParallelRetriever", "params": {"children": [bm25(top_k), dense(top_k)],
                                                         "merge_strategy": strategy, "top_k": 5}}


def composites(rerank_url: str) -> dict[str, dict]:
    return {
        **{f"parallel-{s}": hybrid(s) for s in STRATEGY_NAMES},
        "parallel-weighted": {"component": "ParallelRetriever", "params": {
            "children": [bm25(6), tfidf(6), dense(6)], "merge_strategy": "relative_score", "weights": [2, 0.5, 1]}},
        "sequential": {"component": "SequentialRetriever", "params": {"children": [tfidf(12), bm25(5)]}},
        "sequential-three": {"component": "SequentialRetriever", "params": {
            "children": [{"component": "ParallelRetriever", "params": {
                "children": [bm25(10), dense(10)], "merge_strategy": "rrf", "top_k": 9}}, dense(6), bm25(3)]}},
        "mmr": {"component": "MMRRerankerRetriever", "params": {"children": [bm25(10)], "top_k": 4,
                                                                "embedding": FAST_ONNX}},
        "mmr-hybrid": {"component": "MMRRerankerRetriever", "params": {"children": [hybrid()], "top_k": 3,
                                                                       "lambda_mult": 0.3, "embedding": FAST_ONNX}},
        "http-reranker": {"component": "HttpReranker", "params": {"api_base": rerank_url, "children": [bm25(10)],
                                                                   "fetch_k": 8, "top_k": 4}},
    }


@pytest.fixture(scope="module")
def rerank_server():
    with RerankServer() as server:
        yield server


@pytest.fixture(scope="module")
def llm_server():
    with pytest.MonkeyPatch.context() as patch, ScriptedOpenAIServer() as server:
        patch.setenv(KEY_VAR, "sk-filter-test")
        yield server


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("filtered-composites")


def build(config: dict, folder, name: str):
    return dashrag.build(config, Corpus(tuple(DOCUMENTS)), folder / name, cache_dir=folder / "cache")


@pytest.fixture(scope="module")
def trees(rerank_server, folder):
    built = {name: build(config, folder, name) for name, config in composites(rerank_server.url).items()}
    yield built
    for tree in built.values():
        tree.close()


@pytest.mark.slow
@SETTINGS
@given(raw=filters, query=st.sampled_from(QUERIES))
def test_a_filtered_composite_is_its_combination_of_the_filtered_children(trees, raw, query):
    allowed = set(matching_documents(raw))
    for name, tree in trees.items():
        found, _ = tree.retrieve(query, filters=raw)
        assert_same_answer(found, reference(tree, query, allowed), name)
        [(batched, _)] = tree.retrieve_batch([query], filters=raw)
        assert_same_answer(batched, found, name)


# -- the LLM reranker: the model is shown the filtered candidates, and what it picks is returned -------------------
@pytest.fixture(scope="module")
def llm_tree(llm_server, folder):
    config = {"component": "AgenticRerankerRetriever", "params": {
        "children": [hybrid("rrf", 6)], "k1": 6, "top_k": 3,
        "llm_model": {"component": "LiteLLMModel", "params": {
            "model": "openai/test-model", "api_base": llm_server.api_base, "timeout": 5.0,
            "retry_feedback": "tool_message",
            "credential": {"component": "EnvCredential", "params": {"var": KEY_VAR}}}}}}
    tree = build(config, folder, "llm-reranker")
    yield tree
    tree.close()


def shown_texts(request) -> list[str]:
    """The candidate texts one request showed the model (its numbered lines)."""
    user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    return [json.loads(line.split(" ", 1)[1]) for line in user.splitlines() if line.startswith("[")]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=filters, query=st.sampled_from(QUERIES), order=st.permutations([1, 2, 3]))
def test_the_llm_reranker_chooses_among_the_filtered_candidates(llm_tree, llm_server, raw, query, order):
    allowed = set(matching_documents(raw))
    shown: list[list[str]] = []

    def pick(candidates):
        shown.append([c.chunk.text for c in candidates])
        llm_server.script(select(*order))
        return order

    expected = reference(llm_tree, query, allowed, pick=pick)
    asked = len(llm_server.requests)
    found, _ = llm_tree.retrieve(query, filters=raw)
    assert_same_answer(found, expected, "llm-reranker")
    assert [shown_texts(r) for r in llm_server.requests[asked:]] == shown  # no request when the pool fits top_k
    assert llm_server.remaining == 0


# -- the cross-encoder (a real model: slow) ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def cross_encoder_tree(cross_encoder_dir, folder):
    config = {"component": "CrossEncoderRetriever", "params": {
        "children": [hybrid("rrf", 8)], "model": str(cross_encoder_dir), "max_length": 128, "top_k": 4, "fetch_k": 8}}
    tree = build(config, folder, "cross-encoder")
    yield tree
    tree.close()


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=filters, query=st.sampled_from(QUERIES))
def test_the_cross_encoder_rescores_the_filtered_candidates(cross_encoder_tree, raw, query):
    found, _ = cross_encoder_tree.retrieve(query, filters=raw)
    assert_same_answer(found, reference(cross_encoder_tree, query, set(matching_documents(raw))), "cross-encoder")


# -- the boolean query: the filter is its scope --------------------------------------------------------------------
EXPRESSIONS = ['"asylum appeal"', "'kitchen' OR 'floor'", "\"family reunification\" AND NOT CAT1=A",
               "'cleaning' OR COUNTRY_OF_ORIGIN=IQ", "NOT CAT2=B", ""]
CATEGORY_VALUES = {"lang": LANGS, "tags": TAGS, "CAT1": ["A", "B", "C"], "COUNTRY_OF_ORIGIN": ["IQ", "SY", "AF", "ER"]}


@pytest.fixture(scope="module")
def boolean_tree(folder):
    config = {"component": "BooleanQueryRetriever", "params": {"children": [hybrid("rrf", 6)],
                                                               "min_semantic_score": 0.0}}
    tree = build(config, folder, "boolean")
    yield tree
    tree.close()


category_filters = st.dictionaries(st.sampled_from(sorted(CATEGORY_VALUES)), st.none(), min_size=1, max_size=2).flatmap(
    lambda names: st.fixed_dictionaries({name: st.lists(st.sampled_from(CATEGORY_VALUES[name]), min_size=1,
                                                         max_size=2, unique=True) for name in names}))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wanted=category_filters, expression=st.sampled_from(EXPRESSIONS))
def test_a_filtered_boolean_query_is_the_expression_and_the_filter_s_category_clauses(boolean_tree, wanted,
                                                                                      expression):
    raw = {name: {"$in": values} for name, values in wanted.items()}
    clauses = " AND ".join(f"{name}={','.join(values)}" for name, values in wanted.items())
    written = f"({expression}) AND {clauses}" if expression else clauses
    found, _ = boolean_tree.retrieve(expression, filters=raw)
    anded, _ = boolean_tree.retrieve(written)
    # An AND with a pure filter keeps the expression's own scores, each clause normalised over the corpus (the
    # fragment service, issue 40); a filter scopes the query, each clause normalised over the scope
    # (docs/boolean_queries.md): the same chunks always; for one clause also the same order, every score the
    # same one factor apart (an OR of two clauses combines two normalisations, which may order its union apart).
    assert sorted(c.id for c in found) == sorted(c.id for c in anded), written
    if found and anded[0].score > 0 and expression in ('"asylum appeal"', ""):
        assert [c.id for c in found] == [c.id for c in anded], written
        factor = found[0].score / anded[0].score
        np.testing.assert_allclose([c.score for c in found], [c.score * factor for c in anded], atol=1e-5,
                                   err_msg=written)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=filters, expression=st.sampled_from(EXPRESSIONS))
def test_a_filtered_boolean_query_is_the_expression_in_the_scope_of_the_matching_documents(boolean_tree, raw,
                                                                                           expression):
    found, _ = boolean_tree.retrieve(expression, filters=raw)
    scoped, _ = boolean_tree.retrieve(expression, restriction=Restriction.to_documents(matching_documents(raw)))
    assert_same_answer(found, scoped, expression)
    assert {c.document_id for c in found} <= set(matching_documents(raw))
