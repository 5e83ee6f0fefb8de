"""Neighbour windows are part of every retriever: ``expand_retrieved_chunks`` / ``merge_expanded_chunks`` on
leaves and composites, over a real corpus cut into small chunks."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.documents.windows import ChunkTable, expand_and_merge
from tests.conftest import EXAMPLE_CORPUS

SMALL_CHUNKS = {"component": "CharacterChunker", "params": {"chunk_size": 120, "chunk_overlap": 0}}
TREES = {
    "BM25Retriever": {"component": "BM25Retriever", "params": {"top_k": 10}},
    "TFIDFRetriever": {"component": "TFIDFRetriever", "params": {"top_k": 10}},
    "ParallelRetriever": {"component": "ParallelRetriever", "params": {"children": [
        {"component": "BM25Retriever", "params": {"top_k": 10}},
        {"component": "TFIDFRetriever", "params": {"top_k": 10}}]}},
}


@pytest.fixture(scope="module", params=sorted(TREES))
def retriever(request, tmp_path_factory):
    tree = dashrag.build(TREES[request.param], dashrag.Corpus.from_folder(EXAMPLE_CORPUS),
                         tmp_path_factory.mktemp("windows"), chunker=SMALL_CHUNKS)
    yield tree
    tree.close()


@pytest.fixture(scope="module")
def hits(retriever):
    chunks, _ = retriever.retrieve("dense vectors keyword fusion rank", top_k=10)
    assert len(chunks) >= 5
    return chunks


windows = st.integers(1, 6)
settings_ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@settings_
@given(window=windows, data=st.data())
def test_every_retriever_expands_and_merges_by_the_window_rules(retriever, hits, window, data):
    picked = data.draw(st.lists(st.sampled_from(hits), min_size=1, max_size=len(hits), unique_by=lambda c: c.id))
    merged = retriever.merge_expanded_chunks(retriever.expand_retrieved_chunks(picked, window))
    assert merged == expand_and_merge(picked, window, ChunkTable(retriever.require_infra().chunks.chunks))


@settings_
@given(window=windows, data=st.data())
def test_windows_a_retriever_merges_share_a_chunk_and_touching_ones_stay_separate(retriever, hits, window, data):
    picked = data.draw(st.lists(st.sampled_from(hits), min_size=1, max_size=len(hits), unique_by=lambda c: c.id))
    expanded = retriever.expand_retrieved_chunks(picked, window)
    merged = retriever.merge_expanded_chunks(expanded)
    for one in merged:  # every output window is the union of expanded windows chained by shared chunks
        parts = [set(w.provenance["window"]["chunk_ids"]) for w in expanded
                 if w.id in one.provenance["window"]["hit_ids"]]
        reached = parts[0]
        for _ in parts:
            reached = reached.union(*[p for p in parts if p & reached])
        assert reached == set(one.provenance["window"]["chunk_ids"])
    spans = sorted((m.document_id, m.provenance["window"]["first_position"], m.provenance["window"]["last_position"])
                   for m in merged)
    for (doc_a, _, last_a), (doc_b, first_b, _) in zip(spans, spans[1:]):
        assert doc_a != doc_b or first_b > last_a  # no shared chunk between outputs; touching is allowed


@settings_
@given(data=st.data())
def test_plain_chunks_pass_through_a_retrievers_merge_unwidened(retriever, hits, data):
    picked = data.draw(st.lists(st.sampled_from(hits), min_size=1, max_size=len(hits), unique_by=lambda c: c.id))
    merged = retriever.merge_expanded_chunks(picked)
    assert {c.id: c for c in merged} == {c.id: c for c in picked}
    assert all(c.chunk.text == next(p for p in picked if p.id == c.id).chunk.text for c in merged)


@settings_
@given(window=windows, data=st.data())
def test_expand_retrieved_chunks_merges_overlapping_windows_itself(retriever, hits, window, data):
    """The reference's expand_retrieved_chunks returns overlapping windows merged; merging again changes nothing."""
    picked = data.draw(st.lists(st.sampled_from(hits), min_size=1, max_size=len(hits), unique_by=lambda c: c.id))
    expanded = retriever.expand_retrieved_chunks(picked, window)
    assert expanded == expand_and_merge(picked, window, ChunkTable(retriever.require_infra().chunks.chunks))
    assert retriever.merge_expanded_chunks(expanded) == expanded
