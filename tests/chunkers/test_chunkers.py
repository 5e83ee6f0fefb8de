"""Every chunker: spans inside the text, bounded size, natural boundaries, declared overlap."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag import build_component
from dashrag.chunkers.base import sliding_windows
from dashrag.chunkers.recursive_character import pack, split_pieces
from dashrag.errors import ConfigError

texts = st.text(alphabet=st.sampled_from(list("abc de\n.")), max_size=400)


@settings(max_examples=150, deadline=None)
@given(texts, st.integers(5, 60), st.integers(0, 4))
def test_recursive_chunks_cover_the_text_within_the_size(text, size, overlap):
    spans = pack(split_pieces(text, (0, len(text)), ["\n\n", "\n", ". ", " ", ""], size), size, overlap)
    assert all(e - s <= size for s, e in spans)
    covered = set()
    for s, e in spans:
        covered.update(range(s, e))
    assert covered == set(range(len(text)))
    assert all(a[0] < b[0] for a, b in zip(spans, spans[1:]))


def test_recursive_prefers_paragraph_boundaries():
    chunker = build_component(
        {"component": "RecursiveCharacterChunker", "params": {"chunk_size": 30, "chunk_overlap": 0}}
    )
    text = "First paragraph here.\n\nSecond paragraph here."
    assert [text[s:e] for s, e in chunker.spans(text)] == ["First paragraph here.\n\n", "Second paragraph here."]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 200), st.integers(1, 30), st.data())
def test_sliding_windows_overlap_by_exactly_the_overlap(n, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    windows = sliding_windows(n, size, overlap)
    assert (windows == []) == (n == 0)
    if windows:
        assert windows[0][0] == 0 and windows[-1][1] == n
        assert all(b[0] == a[0] + size - overlap for a, b in zip(windows, windows[1:]))


def test_token_chunker_counts_words():
    chunker = build_component({"component": "TokenChunker", "params": {"chunk_size": 3, "chunk_overlap": 1}})
    text = "one two three four five"
    assert [text[s:e] for s, e in chunker.spans(text)] == ["one two three", "three four five"]


def test_character_chunker_windows():
    chunker = build_component({"component": "CharacterChunker", "params": {"chunk_size": 4, "chunk_overlap": 2}})
    assert chunker.spans("abcdefgh") == [(0, 4), (2, 6), (4, 8)]


def test_overlap_not_smaller_than_size_is_a_config_error():
    with pytest.raises(ConfigError, match="chunk_overlap \\(10\\) must be < chunk_size \\(10\\)"):
        build_component({"component": "TokenChunker", "params": {"chunk_size": 10, "chunk_overlap": 10}})


def test_chunks_carry_document_categories_and_offsets(example_corpus):
    from dashrag.documents.model import SourceDocument

    doc = SourceDocument(id="d", text="alpha beta gamma delta", metadata={"LANG": ("en",)})
    chunks = build_component({"component": "TokenChunker", "params": {"chunk_size": 2, "chunk_overlap": 0}}).chunk(
        [doc]
    )
    assert [(c.position, c.text, c.metadata) for c in chunks] == [
        (0, "alpha beta", {"LANG": ("en",)}),
        (1, "gamma delta", {"LANG": ("en",)}),
    ]
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
