import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.chunkers.recursive_character import RecursiveCharacterChunker
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.fingerprint import ADDITIVE, SEQUENTIAL
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


# -- the fingerprint and an update's chunk set, against their definitions (issue 36) -------------------

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                        max_size=2), max_leaves=5)
documents = st.lists(st.tuples(st.text(min_size=1, max_size=30), st.dictionaries(st.text(max_size=4), json_values,
                                                                                  max_size=3)),
                     min_size=1, max_size=6)


def _chunks(docs):
    from dashrag.documents.model import Chunk

    return [Chunk(id=3 * i + 1, document_id=f"doc{i}", position=0, text=text, start=0, end=len(text), metadata=meta)
            for i, (text, meta) in enumerate(docs)]


def _reference_lines(chunks) -> list[bytes]:
    """One JSON line per chunk, as docs define it (json.dumps of the record)."""
    import json

    from dashrag.documents.model import normalise_categories

    lines = []
    for c in chunks:
        categories = normalise_categories(c.metadata)
        record = [c.id, c.document_id, c.position, c.start, c.end, c.text,
                  sorted((k, list(v)) for k, v in categories.items())]
        others = {k: v for k, v in c.metadata.items() if k not in categories or not isinstance(v, (list, tuple))}
        if others:
            record.append(sorted(others.items()))
        if c.fields:
            record.append({"chunk": sorted(c.fields.items())})
        lines.append(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
    return lines


def _reference_fingerprint(chunks) -> str:
    """The sequential fingerprint (saved-folder format 1): sha256 over the lines in chunk order."""
    import hashlib

    return hashlib.sha256(b"".join(_reference_lines(chunks))).hexdigest()


def _reference_additive(chunks) -> str:
    """The additive fingerprint (format 2): the sum of the lines' sha256 as integers, modulo 2**256."""
    import hashlib

    total = sum(int(hashlib.sha256(line).hexdigest(), 16) for line in _reference_lines(chunks))
    return f"{total % 2**256:064x}"


def _stored(chunks, scheme=ADDITIVE) -> ChunkSet:
    return ChunkSet.from_rows([(c.id, c.document_id, c.position, c.text, c.start, c.end) for c in chunks],
                              {c.document_id: c.metadata for c in chunks}, scheme=scheme)


@pytest.mark.parametrize("named", [3, 40])  # a few ids are scanned for, more looked up in the id -> number map
def test_the_rows_without_some_documents_are_the_others_whichever_way_their_ids_are_found(named):
    chunks = _chunks([(f"text {i}", {}) for i in range(60)])
    removed = [f"doc{i}" for i in range(0, 2 * named, 2)] + ["not-here"]
    for chunk_set in (ChunkSet(chunks), _stored(chunks)):
        kept = [r for r, c in enumerate(chunks) if c.document_id not in removed]
        assert chunk_set.rows_without(removed).tolist() == kept


def test_a_removals_fingerprint_is_shifted_without_the_id_to_number_map():
    """O(change): the removed chunks' metadata is found by their rows' document numbers, not through the map of
    every document id (~0.3 s at a million documents)."""
    chunks = _chunks([(f"text {i}", {"lang": "en", "year": i} if i % 2 else {}) for i in range(40)])
    before = ChunkSet.from_rows([(c.id, c.document_id, c.position, c.text, c.start, c.end) for c in chunks],
                                {c.document_id: c.metadata for c in chunks},
                                fingerprint=_reference_additive(chunks))  # known, as a load knows it
    kept_rows = before.rows_without(["doc3", "doc8"])
    after = before.changed(kept_rows, [])
    assert "_document_number" not in before.__dict__
    assert after.fingerprint == _reference_additive([chunks[r] for r in kept_rows.tolist()])


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(docs=documents)
def test_fingerprint_is_the_json_lines_hash_whether_made_from_chunks_or_store_rows(docs):
    chunks = _chunks(docs)
    assert (ChunkSet(chunks, scheme=SEQUENTIAL).fingerprint == _reference_fingerprint(chunks)
            == _stored(chunks, SEQUENTIAL).fingerprint)
    assert ChunkSet(chunks).fingerprint == _reference_additive(chunks) == _stored(chunks).fingerprint


def test_a_chunk_set_is_fingerprinted_additively_unless_told_otherwise(chunk_set):
    from dataclasses import replace

    chunks = list(chunk_set.chunks)
    renumbered = [replace(c, id=len(chunks) - 1 - c.id) for c in chunks]  # each line holds its chunk's id
    assert chunk_set.fingerprint == _reference_additive(chunks)
    assert ChunkSet(renumbered).fingerprint != chunk_set.fingerprint
    assert chunk_set.fingerprint_under(SEQUENTIAL) == _reference_fingerprint(chunks) != chunk_set.fingerprint
    legacy = chunk_set.with_fingerprint_scheme(SEQUENTIAL)
    assert legacy.fingerprint == _reference_fingerprint(chunks) and legacy.chunks is chunk_set.chunks


@settings(max_examples=60, deadline=None)
@given(docs=documents, more=documents, gone=st.sets(st.integers(0, 5)))
def test_an_updates_chunk_set_is_the_kept_chunks_then_the_new_ones(docs, more, gone):
    from dataclasses import replace

    import numpy as np

    chunks = _chunks(docs)
    new = [replace(c, id=1000 + c.id, document_id=f"new{c.document_id}") for c in _chunks(more)]
    removed = [f"doc{i}" for i in gone]
    kept_rows = np.array([r for r, c in enumerate(chunks) if c.document_id not in removed], dtype=np.int64)
    expected = [chunks[r] for r in kept_rows] + new
    for scheme in (ADDITIVE, SEQUENTIAL):  # a format-1 set's update is fingerprinted additively, whole
        for before in (ChunkSet(chunks, scheme=scheme), _stored(chunks, scheme)):
            assert before.rows_without(removed).tolist() == kept_rows.tolist()
            after = before.changed(kept_rows, new)
            assert list(after.chunks) == expected
            assert after.fingerprint_scheme == ADDITIVE
            assert after.fingerprint == _reference_additive(expected)  # shifted by the change, or hashed whole
            rebuilt = ChunkSet(expected)  # its arrays as a chunk set made from scratch has them
            assert after.ids.tolist() == rebuilt.ids.tolist() and after.document_ids == rebuilt.document_ids
            assert after.document_index.tolist() == rebuilt.document_index.tolist()
            assert after.document_sizes.tolist() == rebuilt.document_sizes.tolist()
            assert after.document_metadata == rebuilt.document_metadata
            assert [after.at(c.document_id, c.position) for c in expected] == expected
