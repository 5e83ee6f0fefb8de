"""dashrag as a LlamaIndex retriever: NodeWithScores from a saved tree and from a running service, sync and
async, filters passed through."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.schema import NodeRelationship, NodeWithScore, TextNode

import dashrag
from dashrag.integrations.llama_index import DashragRetriever
from dashrag.integrations.sources import SavedTree, ServiceCollection
from tests.integrations.conftest import BROAD, QUERY, TOKEN_VAR


def test_nodes_carry_the_text_the_metadata_and_the_score_of_the_trees_answer(notes_trees):
    chunks, _ = dashrag.load(notes_trees / "notes").retrieve(QUERY, top_k=3)
    nodes = DashragRetriever(SavedTree(notes_trees / "notes"), similarity_top_k=3).retrieve(QUERY)
    assert len(nodes) == 3 and all(isinstance(n, NodeWithScore) for n in nodes)
    top = nodes[0]
    assert isinstance(top.node, TextNode) and top.node.text == chunks[0].chunk.text
    assert top.score == pytest.approx(chunks[0].score) and top.node.node_id == str(chunks[0].chunk.id)
    assert top.node.metadata == {**chunks[0].chunk.all_metadata, "kind": "lexical", "document_id": "bm25.md",
                                 "chunk_id": str(chunks[0].chunk.id)}
    assert top.node.metadata["path"] == "bm25.md"  # the file's own fields ride along (docs/documents.md)
    assert top.node.relationships[NodeRelationship.SOURCE].node_id == "bm25.md"


def test_a_filter_restricts_the_nodes_sync_and_async(notes_trees):
    retriever = DashragRetriever(SavedTree(notes_trees / "notes"), similarity_top_k=5, filters={"kind": "semantic"})
    nodes = retriever.retrieve(BROAD)
    assert nodes and {n.node.metadata["kind"] for n in nodes} == {"semantic"}
    assert [n.node.node_id for n in asyncio.run(retriever.aretrieve(BROAD))] == [n.node.node_id for n in nodes]


def test_over_a_service_async(service_url):
    retriever = DashragRetriever(ServiceCollection(service_url, "notes", token_var=TOKEN_VAR), similarity_top_k=3)
    nodes = asyncio.run(retriever.aretrieve(QUERY))
    assert nodes and nodes[0].node.metadata["document_id"] == "bm25.md" and 0.0 <= nodes[0].score <= 1.0


def test_a_top_k_below_one_is_refused(notes_trees):
    with pytest.raises(ValueError, match="similarity_top_k must be at least 1"):
        DashragRetriever(SavedTree(notes_trees / "notes"), similarity_top_k=0)
