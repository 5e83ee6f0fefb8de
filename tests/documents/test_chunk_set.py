import pytest

from dashrag.chunkers.recursive_character import RecursiveCharacterChunker
from dashrag.documents.chunk_set import ChunkSet
from dashrag.errors import UnknownChunkError


@pytest.fixture(scope="module")
def chunk_set(example_corpus):
    return ChunkSet(RecursiveCharacterChunker({"chunk_size": 200, "chunk_overlap": 20}).chunk(example_corpus.documents))


def test_positions_are_contiguous_per_document(chunk_set):
    for doc in chunk_set.document_ids:
        size = chunk_set.document_size(doc)
        assert [chunk_set.at(doc, p).position for p in range(size)] == list(range(size))
        assert chunk_set.at(doc, size) is None


def test_unknown_ids_are_an_error_that_lists_them(chunk_set):
    with pytest.raises(UnknownChunkError, match="99999"):
        chunk_set.rows_of([0, 99999])


def test_fingerprint_changes_with_any_text(chunk_set, example_corpus):
    from dataclasses import replace

    chunks = list(chunk_set.chunks)
    chunks[3] = replace(chunks[3], text=chunks[3].text + "!")
    assert ChunkSet(chunks).fingerprint != chunk_set.fingerprint
    assert ChunkSet(list(chunk_set.chunks)).fingerprint == chunk_set.fingerprint
