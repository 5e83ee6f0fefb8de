"""The node ``retrieve`` is called on records the filter it was asked in its trace (issue 24: the trace did not
say which documents were allowed); its children, handed the parsed restriction, do not repeat it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import dashrag
from dashrag.core.restriction import Restriction
from dashrag.documents.corpus import Corpus
from tests.conftest import EXAMPLE_CORPUS

FILTER = {"$or": [{"lang": "es"}, {"year": {"$gte": 2020}}]}
HYBRID_KEYWORD = {"component": "ParallelRetriever", "params": {"merge_strategy": "rrf", "top_k": 4, "children": [
    {"component": "BM25Retriever", "params": {"top_k": 6}}, {"component": "TFIDFRetriever", "params": {"top_k": 6}}]}}


def tagged_corpus() -> Corpus:
    documents = Corpus.from_folder(EXAMPLE_CORPUS).documents
    return Corpus(tuple(replace(d, metadata={"lang": "es" if i % 2 else "en", "year": 2015 + i})
                        for i, d in enumerate(documents)))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    built = dashrag.build(HYBRID_KEYWORD, tagged_corpus(), tmp_path_factory.mktemp("ask"))
    yield built
    built.close()


def nodes(node: dict) -> list[dict]:
    return [node, *(n for child in node["children"] for n in nodes(child))]


def test_the_root_trace_records_the_filter_as_asked(tree):
    _, trace = tree.retrieve("term weighting", filters=FILTER)
    assert trace["filters"] == FILTER
    assert all("filters" not in node for node in nodes(trace)[1:])


def test_a_filter_given_as_text_is_recorded_as_its_json(tree):
    _, trace = tree.retrieve("term weighting", filters=json.dumps(FILTER))
    assert trace["filters"] == FILTER


def test_every_answer_of_a_batch_records_the_filter(tree):
    answers = tree.retrieve_batch(["term weighting", "dense vectors"], filters=FILTER)
    assert [trace["filters"] for _, trace in answers] == [FILTER, FILTER]


def test_an_unfiltered_query_records_no_filter(tree):
    _, trace = tree.retrieve("term weighting")
    _, restricted = tree.retrieve("term weighting", restriction=Restriction.where(FILTER))
    assert all("filters" not in node for node in nodes(trace) + nodes(restricted))

