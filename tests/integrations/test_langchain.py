"""dashrag as a LangChain retriever: LangChain's own standard retriever tests (langchain-tests) over a saved
tree, and the same retriever over a running service; Documents carry the document's metadata and the score,
filters pass through, sync and async."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

import dashrag
from dashrag.errors import DashragError
from dashrag.integrations.langchain import DashragRetriever
from dashrag.integrations.sources import SavedTree, ServiceCollection
from tests.integrations.conftest import BROAD, KIND, QUERY, TOKEN_VAR


@pytest.mark.anyio  # the harness's async test runs on anyio's pytest plugin (the project's; no asyncio_mode to set)
class TestStandardRetrieverOverASavedTree(RetrieversIntegrationTests):
    """LangChain's harness: ``k`` in the constructor and per call, ``invoke`` and ``ainvoke`` give Documents."""

    trees: Path

    @pytest.fixture(autouse=True)
    def _trees(self, notes_trees) -> None:
        type(self).trees = notes_trees

    @property
    def retriever_constructor(self) -> type[DashragRetriever]:
        return DashragRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"source": SavedTree(self.trees / "notes")}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


def test_documents_carry_the_text_the_metadata_and_the_score_of_the_trees_answer(notes_trees):
    chunks, _ = dashrag.load(notes_trees / "notes").retrieve(QUERY, top_k=3)
    documents = DashragRetriever(source=SavedTree(notes_trees / "notes"), k=3).invoke(QUERY)
    assert [d.metadata["chunk_id"] for d in documents] == [str(c.chunk.id) for c in chunks]
    top = documents[0]
    assert isinstance(top, Document) and top.page_content == chunks[0].chunk.text
    assert top.metadata == {**chunks[0].chunk.all_metadata, "kind": "lexical", "document_id": "bm25.md",
                            "chunk_id": str(chunks[0].chunk.id), "score": pytest.approx(chunks[0].score)}
    assert top.metadata["path"] == "bm25.md"  # the file's own fields ride along (docs/documents.md)


def test_a_filter_set_on_the_retriever_or_per_call_restricts_the_documents(notes_trees):
    retriever = DashragRetriever(source=SavedTree(notes_trees / "notes"), k=5, filters={"kind": "semantic"})
    assert {d.metadata["kind"] for d in retriever.invoke(BROAD)} == {"semantic"}
    per_call = retriever.invoke(BROAD, filters={"kind": {"$in": ["fusion", "lexical"]}})
    assert {d.metadata["kind"] for d in per_call} == {"fusion", "lexical"}


@pytest.mark.slow
def test_over_a_service_sync_and_async_give_the_services_answer(service_url, notes_trees):
    retriever = DashragRetriever(source=ServiceCollection(service_url, "notes", token_var=TOKEN_VAR), k=3)
    documents = retriever.invoke(QUERY, filters={"kind": "lexical"})
    assert documents and documents[0].metadata["document_id"] == "bm25.md"
    assert {d.metadata["kind"] for d in documents} == {"lexical"} and len(documents) <= 3
    assert all(0.0 <= d.metadata["score"] <= 1.0 for d in documents)  # the service's calibrated scores
    assert [d.page_content for d in asyncio.run(retriever.ainvoke(QUERY, filters={"kind": "lexical"}))] == \
        [d.page_content for d in documents]
    assert set(KIND[d.metadata["document_id"]] for d in documents) == {"lexical"}


def test_a_service_that_refuses_the_token_is_a_clear_error(service_url, monkeypatch):
    monkeypatch.setenv("DASHRAG_WRONG_TOKEN", "not-the-token")
    retriever = DashragRetriever(source=ServiceCollection(service_url, "notes", token_var="DASHRAG_WRONG_TOKEN"))
    with pytest.raises(DashragError, match="answered 401"):
        retriever.invoke(QUERY)
    with pytest.raises(DashragError, match="DASHRAG_UNSET_TOKEN is not set"):
        DashragRetriever(source=ServiceCollection(service_url, "notes", token_var="DASHRAG_UNSET_TOKEN")).invoke(QUERY)
