"""doc2query through a real OpenAI-compatible server on loopback (scripted answers): queries, failures, deadline."""

from __future__ import annotations

import json

import pytest

from dashrag.documents.model import SourceDocument
from dashrag.finetuning.doc2query import DOC2QUERY, WRITE_QUERIES, llm_queries, sample
from dashrag.llm.litellm_model import LiteLLMModel
from tests.llm.openai_server import Reply, http_error, plain_text

DOCUMENTS = [SourceDocument(f"d{i}", f"Document {i} explains topic number {i} in some detail.", title=f"Topic {i}")
             for i in range(5)]


def written(*queries: str) -> Reply:
    return Reply(tool_calls=((WRITE_QUERIES, json.dumps({"queries": list(queries)})),))


@pytest.fixture
def model(openai_server):
    llm = LiteLLMModel({"model": "openai/test-model", "api_base": openai_server.api_base})
    yield llm
    llm.close()


def test_each_sampled_document_gets_the_queries_the_model_wrote(openai_server, model):
    openai_server.script(written("what is topic one about", "topic one details"), written("second topic explained"))
    result = llm_queries(model, DOCUMENTS[:2], sample_size=2, per_document=2)
    assert [(q.query, q.document_id, q.source) for q in result.queries] == [
        ("what is topic one about", "d0", DOC2QUERY), ("topic one details", "d0", DOC2QUERY),
        ("second topic explained", "d1", DOC2QUERY)]
    assert result.asked == 2 and result.failed == []
    body = openai_server.requests[0].body
    assert body["tool_choice"]["function"]["name"] == WRITE_QUERIES
    assert "Document 0 explains topic number 0" in body["messages"][0]["content"]


def test_a_failed_or_out_of_contract_answer_costs_that_document_only(openai_server, model):
    openai_server.script(http_error(500), plain_text("here are some queries"),
                         Reply(tool_calls=((WRITE_QUERIES, json.dumps({"queries": "not a list"})),)),
                         written("the fourth topic"))
    result = llm_queries(model, DOCUMENTS[:4], sample_size=4)
    assert [q.document_id for q in result.queries] == ["d3"]
    assert [line.split(":")[0] for line in result.failed] == ["d0", "d1", "d2"]
    assert "list of strings" in result.failed[2]


def test_no_call_is_made_after_the_deadline(openai_server, model):
    openai_server.script(written("a query about topic zero"), written("never asked for"))
    ticks = iter([0.0, 10.0])
    result = llm_queries(model, DOCUMENTS[:2], sample_size=2, deadline=5.0, clock=lambda: next(ticks))
    assert result.asked == 1 and result.stopped_at_deadline
    assert openai_server.remaining == 1


def test_the_sample_is_seeded_and_in_corpus_order():
    assert [d.id for d in sample(DOCUMENTS, 3, 7)] == [d.id for d in sample(DOCUMENTS, 3, 7)]
    ids = [d.id for d in sample(DOCUMENTS, 3, 7)]
    assert ids == sorted(ids) and len(ids) == 3
    assert sample(DOCUMENTS, 9, 7) == DOCUMENTS
