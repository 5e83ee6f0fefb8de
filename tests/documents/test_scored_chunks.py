"""ScoredChunks: a leaf's columnar answer reads as the list of ScoredChunk it stands for."""

import numpy as np
import pytest

from dashrag.chunkers.whole_document import WholeDocumentChunker
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.model import ScoredChunk
from dashrag.documents.scored_chunks import ScoredChunks, as_trace_output


@pytest.fixture(scope="module")
def chunk_set(example_corpus):
    return ChunkSet(WholeDocumentChunker({}).chunk(example_corpus.documents))


@pytest.fixture()
def answer(chunk_set):
    rows, scores = np.array([3, 0, 5]), np.array([2.5, 1.25, 0.5], dtype=np.float32)
    listed = [ScoredChunk(chunk_set.chunks[r], float(s), "BM25Retriever") for r, s in zip(rows, scores)]
    return ScoredChunks(chunk_set, rows, scores, "BM25Retriever"), listed


def test_columns_read_as_the_list_of_scored_chunks(answer):
    columnar, listed = answer
    assert len(columnar) == 3 and columnar == listed and list(columnar) == listed
    assert columnar[0] == listed[0] and columnar[-1] == listed[-1] and columnar[1:] == listed[1:]


def test_chunk_ids_come_without_making_objects(answer):
    columnar, listed = answer
    assert columnar.chunk_ids == [c.id for c in listed]


@pytest.mark.parametrize("include_text, limit", [(False, None), (True, None), (False, 2), (True, 0)])
def test_trace_output_from_columns_equals_to_json(answer, include_text, limit):
    columnar, listed = answer
    shown = listed if limit is None else listed[:limit]
    assert as_trace_output(columnar, include_text, limit) == [c.to_json(include_text=include_text) for c in shown]
    assert as_trace_output(listed, include_text, limit) == [c.to_json(include_text=include_text) for c in shown]
