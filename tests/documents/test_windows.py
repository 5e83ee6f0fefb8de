"""Neighbour-window expansion: the window rule, clipping at both edges, merges, order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.documents.model import Chunk, ScoredChunk
from dashrag.documents.windows import (
    ChunkTable,
    expand_and_merge,
    expand_retrieved_chunks,
    merge_expanded_chunks,
    window_positions,
)
from dashrag.errors import ConfigError, CorpusError, UnknownChunkError

# -- corpus builders -----------------------------------------------------------------


def cut_document(document_id: str, pieces: list[str], first_id: int) -> tuple[str, list[Chunk]]:
    """A document text and its chunks, cut back to back with faithful offsets."""
    chunks, offset = [], 0
    for position, piece in enumerate(pieces):
        chunks.append(Chunk(first_id + position, document_id, position, piece, offset, offset + len(piece)))
        offset += len(piece)
    return "".join(pieces), chunks


def corpus_of(sizes: list[int]) -> tuple[dict[str, str], list[Chunk]]:
    texts: dict[str, str] = {}
    chunks: list[Chunk] = []
    for d, size in enumerate(sizes):
        pieces = [f"<d{d}p{p}>" for p in range(size)]
        texts[f"doc{d}"], doc_chunks = cut_document(f"doc{d}", pieces, len(chunks))
        chunks += doc_chunks
    return texts, chunks


def hit(chunk: Chunk, score: float) -> ScoredChunk:
    return ScoredChunk(chunk, score, "test-retriever", {"rank": 1})


@st.composite
def corpus_and_hits(draw):
    sizes = draw(st.lists(st.integers(1, 9), min_size=1, max_size=4))
    texts, chunks = corpus_of(sizes)
    picked = draw(st.lists(st.sampled_from(chunks), min_size=1, max_size=10, unique_by=lambda c: c.id))
    # few distinct scores, so ties between hits are common
    scores = draw(st.lists(st.sampled_from([0.1, 0.5, 0.5, 0.9, 2.0]), min_size=len(picked), max_size=len(picked)))
    return texts, chunks, [hit(c, s) for c, s in zip(picked, scores)]


windows_sizes = st.integers(1, 8)

# -- window_positions ------------------------------------------------------------------


@pytest.mark.parametrize(
    "position, n_chunks, window, expected",
    [
        (2, 5, 3, range(1, 4)),  # odd: centred
        (2, 6, 4, range(1, 5)),  # even: one before, two after
        (2, 9, 5, range(0, 5)),
        (0, 5, 3, range(0, 2)),  # first chunk: clipped, not shifted
        (4, 5, 3, range(3, 5)),  # last chunk: clipped, not shifted
        (0, 5, 4, range(0, 3)),
        (4, 5, 4, range(3, 5)),
        (1, 2, 7, range(0, 2)),  # document shorter than the window: all of it
        (0, 4, 5, range(0, 3)),  # shorter, but the far chunk is beyond reach: clipped
        (3, 5, 1, range(3, 4)),  # window 1: the hit alone
    ],
)
def test_window_positions_examples(position, n_chunks, window, expected):
    assert window_positions(position, n_chunks, window) == expected


@given(st.integers(0, 50), st.integers(0, 4).map(lambda k: 2 * k + 1))
def test_odd_window_is_centred_exactly_away_from_edges(position, window):
    n_chunks = position + window  # room on the right; left room depends on position
    positions = window_positions(position, n_chunks, window)
    if position >= window // 2:
        assert position - positions.start == positions.stop - 1 - position == window // 2


@given(st.integers(0, 50), st.integers(1, 4).map(lambda k: 2 * k))
def test_even_window_keeps_extra_chunk_after_the_hit(position, window):
    positions = window_positions(position + window, position + 2 * window, window)
    hit_position = position + window
    assert (positions.stop - 1 - hit_position) - (hit_position - positions.start) == 1
    assert len(positions) == window


@given(st.integers(1, 30), windows_sizes, st.data())
def test_window_never_leaves_the_document_and_holds_the_hit(n_chunks, window, data):
    position = data.draw(st.integers(0, n_chunks - 1))
    positions = window_positions(position, n_chunks, window)
    assert 0 <= positions.start <= position < positions.stop <= n_chunks
    assert len(positions) == min(window, n_chunks) or positions.start == 0 or positions.stop == n_chunks


@given(st.integers(1, 30), windows_sizes, st.data())
def test_clipping_only_removes_what_crosses_an_edge(n_chunks, window, data):
    position = data.draw(st.integers(0, n_chunks - 1))
    far = 1000  # the same window far from any edge, shifted back: the ideal, unclipped window
    ideal = [p - far for p in window_positions(position + far, 10 * far, window)]
    clipped = window_positions(position, n_chunks, window)
    assert list(clipped) == [p for p in ideal if 0 <= p < n_chunks]


@given(st.integers(1, 10), st.integers(0, 3))
def test_document_within_reach_on_both_sides_comes_back_whole(n_chunks, excess):
    # clipping, not shifting: the whole document comes back for every hit exactly when
    # it fits on both sides of the hit, i.e. n_chunks - 1 <= (window - 1) // 2
    window = 2 * n_chunks - 1 + excess
    for position in range(n_chunks):
        assert window_positions(position, n_chunks, window) == range(0, n_chunks)


def test_window_below_one_is_a_config_error():
    with pytest.raises(ConfigError, match="must be >= 1"):
        window_positions(0, 3, 0)


def test_position_outside_document_is_an_unknown_chunk():
    with pytest.raises(UnknownChunkError):
        window_positions(3, 3, 3)


# -- ChunkTable ----------------------------------------------------------------------


def test_chunk_table_rejects_two_chunks_at_one_position():
    with pytest.raises(CorpusError, match="two chunks at position 0"):
        ChunkTable([Chunk(1, "d", 0, "a"), Chunk(2, "d", 0, "b")])


def test_chunk_table_rejects_positions_with_a_hole():
    with pytest.raises(CorpusError, match="not 0..1"):
        ChunkTable([Chunk(1, "d", 0, "a"), Chunk(2, "d", 2, "b")])


def test_expanding_a_hit_of_an_unknown_document_is_an_error():
    table = ChunkTable(corpus_of([3])[1])
    with pytest.raises(UnknownChunkError, match="unknown document"):
        expand_retrieved_chunks([hit(Chunk(99, "elsewhere", 0, "x"), 1.0)], 3, table)


# -- merges: examples ----------------------------------------------------------------


def merged_spans(out: list[ScoredChunk]) -> list[tuple[str, int, int]]:
    return [(c.document_id, c.provenance["window"]["first_position"], c.provenance["window"]["last_position"])
            for c in out]


def merged_windows(first: int, second: int, sizes: tuple[int, ...] = (8,)) -> list[tuple[str, int, int]]:
    """The spans after expanding the chunks at rows ``first`` (score 1.0) and ``second`` (0.5) to
    windows of 3 and merging them, over documents of ``sizes`` chunks."""
    _, chunks = corpus_of(list(sizes))
    return merged_spans(expand_and_merge([hit(chunks[first], 1.0), hit(chunks[second], 0.5)], 3, ChunkTable(chunks)))


def test_overlapping_windows_merge_into_one_chunk():
    assert merged_windows(2, 3) == [("doc0", 1, 4)]


def test_touching_windows_stay_separate():
    assert merged_windows(1, 4) == [("doc0", 0, 2), ("doc0", 3, 5)]


def test_windows_sharing_one_chunk_merge():
    assert merged_windows(1, 3) == [("doc0", 0, 4)]


def test_a_plain_chunk_passes_through_merge_unwidened():
    texts, chunks = corpus_of([8])
    plain = hit(chunks[5], 0.3)
    assert merge_expanded_chunks([plain], ChunkTable(chunks)) == [plain]


def test_a_plain_chunk_inside_a_window_merges_into_it_without_widening_it():
    texts, chunks = corpus_of([8])
    (window,) = expand_retrieved_chunks([hit(chunks[2], 1.0)], 3, ChunkTable(chunks))
    out = merge_expanded_chunks([window, hit(chunks[3], 0.2)], ChunkTable(chunks))
    assert merged_spans(out) == [("doc0", 1, 3)] and out[0].provenance["window"]["hit_ids"] == [2, 3]


def test_windows_with_a_gap_stay_apart():
    assert merged_windows(1, 5) == [("doc0", 0, 2), ("doc0", 4, 6)]


def test_same_positions_in_two_documents_stay_apart():
    assert merged_windows(1, 4, sizes=(3, 3)) == [("doc0", 0, 2), ("doc1", 0, 2)]


def test_merged_chunk_takes_id_score_and_provenance_of_its_best_hit():
    texts, chunks = corpus_of([8])
    out = expand_and_merge([hit(chunks[2], 0.4), hit(chunks[3], 0.7)], 3, ChunkTable(chunks))
    (merged,) = out
    assert (merged.id, merged.chunk.position, merged.score, merged.provenance["rank"]) == (3, 3, 0.7, 1)
    assert merged.provenance["window"] == {
        "chunk_ids": [1, 2, 3, 4],
        "first_position": 1,
        "last_position": 4,
        "hit_ids": [3, 2],
    }


def test_merged_text_and_offsets_span_the_window():
    texts, chunks = corpus_of([8])
    (merged,) = expand_and_merge([hit(chunks[2], 1.0)], 4, ChunkTable(chunks))
    assert merged.chunk.text == texts["doc0"][chunks[1].start : chunks[4].end]
    assert (merged.chunk.start, merged.chunk.end) == (chunks[1].start, chunks[4].end)


def test_overlapping_chunk_texts_are_not_repeated():
    text = "alpha beta gamma delta"
    chunks = [
        Chunk(0, "d", 0, text[0:11], 0, 11),
        Chunk(1, "d", 1, text[6:17], 6, 17),
        Chunk(2, "d", 2, text[12:], 12, 22),
    ]
    (merged,) = expand_and_merge([hit(chunks[1], 1.0)], 3, ChunkTable(chunks))
    assert merged.chunk.text == text


def test_chunks_without_offsets_are_joined_with_the_separator():
    chunks = [Chunk(0, "d", 0, "one"), Chunk(1, "d", 1, "two"), Chunk(2, "d", 2, "three")]
    windows = expand_retrieved_chunks([hit(chunks[1], 1.0)], 3, ChunkTable(chunks), separator="\n")
    (merged,) = merge_expanded_chunks(windows, ChunkTable(chunks), separator="\n")
    assert merged.chunk.text == "one\ntwo\nthree"


def test_a_hit_listed_twice_is_expanded_once():
    texts, chunks = corpus_of([8])
    windows = expand_retrieved_chunks([hit(chunks[2], 1.0), hit(chunks[2], 0.3)], 3, ChunkTable(chunks))
    assert [(w.provenance["window"]["chunk_ids"], w.score) for w in windows] == [([1, 2, 3], 1.0)]


def test_output_is_ordered_by_best_hit_not_by_position():
    texts, chunks = corpus_of([9, 3])
    hits = [hit(chunks[0], 0.2), hit(chunks[7], 0.9), hit(chunks[10], 0.5)]
    out = expand_and_merge(hits, 1, ChunkTable(chunks))
    assert [c.id for c in out] == [7, 10, 0]


# -- merges: properties ----------------------------------------------------------------


@settings(max_examples=200, deadline=None)  # a property, not a timing: no deadline on a shared CPU
@given(corpus_and_hits(), windows_sizes)
def test_every_hit_lies_in_exactly_one_output_window(case, window):
    texts, chunks, hits = case
    out = expand_and_merge(hits, window, ChunkTable(chunks))
    for h in hits:
        assert sum(h.id in c.provenance["window"]["chunk_ids"] for c in out) == 1
        assert sum(h.id in c.provenance["window"]["hit_ids"] for c in out) == 1


@settings(max_examples=200, deadline=None)  # a property, not a timing: no deadline on a shared CPU
@given(corpus_and_hits(), windows_sizes)
def test_no_output_window_crosses_documents(case, window):
    texts, chunks, hits = case
    by_id = {c.id: c for c in chunks}
    for merged in expand_and_merge(hits, window, ChunkTable(chunks)):
        ids = merged.provenance["window"]["chunk_ids"]
        assert {by_id[i].document_id for i in ids} == {merged.document_id}
        positions = [by_id[i].position for i in ids]
        assert positions == list(range(positions[0], positions[0] + len(positions)))


@settings(max_examples=200, deadline=None)  # a property, not a timing: no deadline on a shared CPU
@given(corpus_and_hits(), windows_sizes)
def test_output_covers_exactly_the_union_of_hit_windows(case, window):
    texts, chunks, hits = case
    table = ChunkTable(chunks)
    expected = {
        (h.document_id, p)
        for h in hits
        for p in window_positions(h.chunk.position, table.chunk_count(h.document_id), window)
    }
    by_id = {c.id: c for c in chunks}
    covered = [
        (by_id[i].document_id, by_id[i].position)
        for merged in expand_and_merge(hits, window, table)
        for i in merged.provenance["window"]["chunk_ids"]
    ]
    assert sorted(covered) == sorted(expected)  # no position twice, none missing, none extra


@settings(max_examples=200, deadline=None)  # a property, not a timing: no deadline on a shared CPU
@given(corpus_and_hits(), windows_sizes)
def test_output_windows_of_one_document_share_no_chunk(case, window):
    texts, chunks, hits = case
    spans = sorted(merged_spans(expand_and_merge(hits, window, ChunkTable(chunks))))
    for (doc_a, _, last_a), (doc_b, first_b, _) in zip(spans, spans[1:]):
        assert doc_a != doc_b or first_b > last_a


@settings(max_examples=200, deadline=None)  # a property, not a timing: no deadline on a shared CPU
@given(corpus_and_hits(), windows_sizes)
def test_windows_sharing_a_chunk_merge_and_touching_windows_stay_separate(case, window):
    """Merge exactly the expanded windows that share a chunk (transitively), and nothing else."""
    texts, chunks, hits = case
    table = ChunkTable(chunks)
    expanded = expand_retrieved_chunks(hits, window, table)
    out = merge_expanded_chunks(expanded, table)
    owner = {}  # each expanded window's hit → the output chunk that holds it
    for merged in out:
        for hit_id in merged.provenance["window"]["hit_ids"]:
            owner[hit_id] = merged.id
    spans = [(set(w.provenance["window"]["chunk_ids"]), w.id) for w in expanded]
    group = {hit_id: hit_id for _, hit_id in spans}  # union-find over "shares a chunk"

    def root(x: int) -> int:
        while group[x] != x:
            x = group[x]
        return x

    for ids_a, hit_a in spans:
        for ids_b, hit_b in spans:
            if ids_a & ids_b:  # chunk ids are unique corpus-wide: sharing one means the same document
                group[root(hit_a)] = root(hit_b)
    for _, hit_a in spans:
        for _, hit_b in spans:
            assert (owner[hit_a] == owner[hit_b]) == (root(hit_a) == root(hit_b))


@settings(max_examples=200, deadline=None)  # a property, not a timing: no deadline on a shared CPU
@given(corpus_and_hits())
def test_plain_chunks_that_share_no_chunk_pass_through_merge_unwidened(case):
    texts, chunks, hits = case
    out = merge_expanded_chunks(hits, ChunkTable(chunks))
    assert sorted(out, key=lambda c: c.id) == sorted(hits, key=lambda c: c.id)
    assert all("window" not in c.provenance for c in out)


@settings(max_examples=200, deadline=None)  # a property, not a timing: no deadline on a shared CPU
@given(corpus_and_hits(), windows_sizes)
def test_output_is_ordered_by_each_windows_best_hit(case, window):
    texts, chunks, hits = case
    out = expand_and_merge(hits, window, ChunkTable(chunks))
    score_of = {h.id: h.score for h in hits}
    for merged in out:
        assert merged.score == max(score_of[i] for i in merged.provenance["window"]["hit_ids"])
        assert merged.id == merged.provenance["window"]["hit_ids"][0]
    assert [m.score for m in out] == sorted((m.score for m in out), reverse=True)


@settings(max_examples=200, deadline=None)  # a property, not a timing: no deadline on a shared CPU
@given(corpus_and_hits(), windows_sizes)
def test_best_hit_ties_go_to_the_earlier_hit(case, window):
    texts, chunks, hits = case
    arrival = {h.id: i for i, h in enumerate(hits)}
    out = expand_and_merge(hits, window, ChunkTable(chunks))
    for merged in out:
        tied = [
            i
            for i in merged.provenance["window"]["hit_ids"]
            if next(h for h in hits if h.id == i).score == merged.score
        ]
        assert merged.id == min(tied, key=arrival.__getitem__)
    for a, b in zip(out, out[1:]):
        assert a.score > b.score or arrival[a.id] < arrival[b.id]


@settings(max_examples=200, deadline=None)  # a property, not a timing: no deadline on a shared CPU
@given(corpus_and_hits(), windows_sizes)
def test_merged_text_is_the_document_slice(case, window):
    texts, chunks, hits = case
    for merged in expand_and_merge(hits, window, ChunkTable(chunks)):
        assert merged.chunk.text == texts[merged.document_id][merged.chunk.start : merged.chunk.end]


def test_chunks_with_a_gap_between_them_are_joined_with_a_space_by_default():
    chunks = [Chunk(0, "d", 0, "First.", 0, 6), Chunk(1, "d", 1, "Second.", 8, 15)]
    (merged,) = expand_and_merge([hit(chunks[0], 1.0)], 2, ChunkTable(chunks))
    assert merged.chunk.text == "First. Second."
