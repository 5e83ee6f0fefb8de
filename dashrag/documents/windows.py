"""Neighbour-window expansion: widen retrieved chunks with the chunks around them.

A retrieved chunk is often too short to answer from; its neighbours in the same
document carry the missing context. The rules, fixed here once (docs/agentic.md):

* ``window`` is the *total* number of chunks in a window, the hit included.
  Odd windows are centred exactly on the hit (``window=3``: one before, one after);
  even windows keep the extra chunk *after* the hit (``window=4``: one before, two
  after), because text usually continues what the hit started.
* Windows never leave the document. A window that would cross an edge is
  **clipped**, not shifted: a hit at position 0 with ``window=3`` gets positions
  0..1, not 0..2. Shifting would pull in a chunk farther from the hit than the rule
  allows and break the "centred exactly" promise; clipping keeps every chunk of a
  window within its stated distance of the hit. Consequently a document shorter
  than the window comes back whole only when it lies within reach on both sides of
  the hit (``n_chunks - 1 <= (window - 1) // 2``); otherwise it is clipped like any
  other (a hit at position 0 of a 4-chunk document with ``window=5`` gets 0..2).
* Windows of the same document that *share at least one chunk* merge into one
  chunk. Windows that only touch (one ends where the next begins) stay separate, as
  in the reference: each is its own passage around its own hit.
* ``expand_retrieved_chunks`` returns one chunk per window (its text already the
  window's text, ``provenance["window"]`` saying which chunks it spans);
  ``merge_expanded_chunks`` takes such chunks and merges those that share a chunk.
  A plain chunk (one that was never expanded) given to ``merge_expanded_chunks``
  counts as a window of itself: alone it passes through unchanged, unwidened.
* A merged chunk keeps the **id, position, metadata, score and source of its best
  hit** (highest score; on a tie the hit that came first), so dedup by id, the
  qrels of its document and ``score_chunks`` keep working on it. Its text is the
  window's chunks joined in position order, its offsets run from the first chunk's
  start to the last chunk's end, and ``provenance["window"]`` lists the merged chunk
  ids, the first and last position and the ids of the hits inside.
* The output is ordered by each merged window's best hit score, best first (ties
  keep the order in which the best hits arrived).

Everything here is a pure function over :mod:`dashrag.documents.model` types plus a
:class:`NeighbourLookup` that answers ``(document_id, position) -> Chunk`` and each
document's chunk count. The chunks of every window of one expansion are asked of it at
once (``chunks_at``): a loaded tree reads their texts from its store in one batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence

from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.model import Chunk, ScoredChunk
from dashrag.errors import ConfigError, CorpusError, UnknownChunkError

#: Joins two neighbouring chunks whose offsets leave a gap (or are unknown); chunks
#: whose offsets show they are contiguous or overlapping are joined without it.
DEFAULT_SEPARATOR = " "


class NeighbourLookup(Protocol):
    """What expansion needs to know about the corpus: a chunk by address, and how many a document has."""

    def chunk_at(self, document_id: str, position: int) -> Chunk: ...

    def chunks_at(self, addresses: Sequence[tuple[str, int]]) -> list[Chunk]:
        """The chunks at ``(document_id, position)`` addresses, in order, in one read (an unknown one: an error)."""
        ...

    def chunk_count(self, document_id: str) -> int: ...


class ChunkTable:
    """An in-memory :class:`NeighbourLookup` over a corpus's chunks.

    Refuses a corpus whose positions are not 0-based and contiguous per document,
    since every window computation relies on that (docs/design.md, chunk addressing).
    """

    def __init__(self, chunks: Iterable[Chunk]):
        by_document: dict[str, dict[int, Chunk]] = {}
        for chunk in chunks:
            positions = by_document.setdefault(chunk.document_id, {})
            if chunk.position in positions:
                raise CorpusError(
                    f"document {chunk.document_id!r} has two chunks at position {chunk.position}"
                )
            positions[chunk.position] = chunk
        self._chunks: dict[str, tuple[Chunk, ...]] = {}
        for document_id, positions in by_document.items():
            if sorted(positions) != list(range(len(positions))):
                raise CorpusError(
                    f"document {document_id!r}: chunk positions are not 0..{len(positions) - 1}"
                )
            self._chunks[document_id] = tuple(positions[p] for p in range(len(positions)))

    def chunk_at(self, document_id: str, position: int) -> Chunk:
        chunks = self._chunks.get(document_id)
        if chunks is None or not 0 <= position < len(chunks):
            raise UnknownChunkError(f"no chunk at position {position} of document {document_id!r}")
        return chunks[position]

    def chunks_at(self, addresses: Sequence[tuple[str, int]]) -> list[Chunk]:
        return [self.chunk_at(d, p) for d, p in addresses]

    def chunk_count(self, document_id: str) -> int:
        if document_id not in self._chunks:
            raise UnknownChunkError(f"unknown document {document_id!r}")
        return len(self._chunks[document_id])


class ChunkSetLookup:
    """A corpus's :class:`ChunkSet` as the neighbour lookup window expansion needs."""

    def __init__(self, chunks: ChunkSet):
        self.chunks = chunks

    def chunk_at(self, document_id: str, position: int) -> Chunk:
        return self.chunks_at([(document_id, position)])[0]

    def chunks_at(self, addresses: Sequence[tuple[str, int]]) -> list[Chunk]:
        found = self.chunks.at_positions(addresses)
        for (document_id, position), chunk in zip(addresses, found):
            if chunk is None:
                raise UnknownChunkError(f"no chunk at position {position} of document {document_id!r}")
        return [c for c in found if c is not None]

    def chunk_count(self, document_id: str) -> int:
        count = self.chunks.document_size(document_id)
        if count == 0:
            raise UnknownChunkError(f"unknown document {document_id!r}")
        return count


@dataclass(frozen=True)
class ChunkWindow:
    """The positions ``[start, stop)`` of one document around one or more hits."""

    document_id: str
    start: int
    stop: int
    hits: tuple[ScoredChunk, ...]  # best first

    @property
    def best(self) -> ScoredChunk:
        return self.hits[0]


def window_positions(position: int, n_chunks: int, window: int) -> range:
    """Positions of the window of total size ``window`` around ``position``, clipped to ``0..n_chunks-1``."""
    if window < 1:
        raise ConfigError(f"expand window must be >= 1, got {window}")
    if not 0 <= position < n_chunks:
        raise UnknownChunkError(f"position {position} is outside a document of {n_chunks} chunks")
    before = (window - 1) // 2
    after = window - 1 - before  # the extra chunk of an even window goes after the hit
    return range(max(0, position - before), min(n_chunks, position + after + 1))


def expand_retrieved_chunks(
    hits: Sequence[ScoredChunk], window: int, lookup: NeighbourLookup, separator: str = DEFAULT_SEPARATOR
) -> list[ScoredChunk]:
    """One window chunk per distinct hit (dedup by chunk id, first occurrence kept), in hit order."""
    windows: list[ChunkWindow] = []
    seen: set[int] = set()
    for hit in hits:
        if hit.id in seen:
            continue
        seen.add(hit.id)
        positions = window_positions(hit.chunk.position, lookup.chunk_count(hit.document_id), window)
        windows.append(ChunkWindow(hit.document_id, positions.start, positions.stop, (hit,)))
    return _as_scored_chunks(windows, lookup, separator)


def window_of(chunk: ScoredChunk) -> ChunkWindow:
    """The positions a chunk spans: its window when it was expanded, else its own position."""
    window = chunk.provenance.get("window")
    if window is None:
        return ChunkWindow(chunk.document_id, chunk.chunk.position, chunk.chunk.position + 1, (chunk,))
    return ChunkWindow(chunk.document_id, window["first_position"], window["last_position"] + 1, (chunk,))


def merge_expanded_chunks(
    chunks: Sequence[ScoredChunk], lookup: NeighbourLookup, separator: str = DEFAULT_SEPARATOR
) -> list[ScoredChunk]:
    """Merge the windows of a document that share a chunk into one chunk each, best window first.

    Windows arrive in hit order; that arrival order breaks score ties, so the result
    is deterministic whatever the scores. A window that merges with nothing comes
    back as it was given (a plain chunk stays plain).
    """
    by_document: dict[str, list[tuple[ChunkWindow, int]]] = {}
    for arrival, chunk in enumerate(chunks):
        w = window_of(chunk)
        by_document.setdefault(w.document_id, []).append((w, arrival))
    merged: list[tuple[ChunkWindow, int]] = []
    for document_id, items in by_document.items():
        items.sort(key=lambda item: (item[0].start, item[1]))
        group = [items[0]]
        for item in items[1:]:
            if item[0].start < max(w.stop for w, _ in group):  # shares at least one chunk
                group.append(item)
            else:
                merged.append(_ranked_window(document_id, group))
                group = [item]
        merged.append(_ranked_window(document_id, group))
    merged.sort(key=lambda item: (-item[0].best.score, item[1]))
    joined = iter(_as_scored_chunks([w for w, _ in merged if len(w.hits) > 1], lookup, separator))
    return [w.hits[0] if len(w.hits) == 1 else next(joined) for w, _ in merged]


def expand_and_merge(
    hits: Sequence[ScoredChunk], window: int, lookup: NeighbourLookup, separator: str = DEFAULT_SEPARATOR
) -> list[ScoredChunk]:
    """The whole step: expand every hit, then merge the windows that share a chunk."""
    return merge_expanded_chunks(expand_retrieved_chunks(hits, window, lookup, separator), lookup, separator)


def _ranked_window(document_id: str, group: list[tuple[ChunkWindow, int]]) -> tuple[ChunkWindow, int]:
    """One window over a group's span, its chunks best first (score, then arrival), and the best one's arrival."""
    ranked = sorted(((w.best, arrival) for w, arrival in group), key=lambda pair: (-pair[0].score, pair[1]))
    start, stop = min(w.start for w, _ in group), max(w.stop for w, _ in group)
    return ChunkWindow(document_id, start, stop, tuple(h for h, _ in ranked)), ranked[0][1]


def _as_scored_chunks(windows: Sequence[ChunkWindow], lookup: NeighbourLookup, separator: str) -> list[ScoredChunk]:
    """One chunk per window, the chunks of all of them read at once."""
    found = iter(lookup.chunks_at([(w.document_id, p) for w in windows for p in range(w.start, w.stop)]))
    return [_as_scored_chunk(w, [next(found) for _ in range(w.start, w.stop)], separator) for w in windows]


def _as_scored_chunk(w: ChunkWindow, chunks: Sequence[Chunk], separator: str) -> ScoredChunk:
    best = w.best
    hit_ids = list(dict.fromkeys(i for h in w.hits
                                 for i in (h.provenance["window"]["hit_ids"] if "window" in h.provenance else [h.id])))
    text = _join_texts(chunks, separator)
    window_chunk = Chunk(
        id=best.chunk.id,
        document_id=w.document_id,
        position=best.chunk.position,
        text=text,
        start=chunks[0].start,
        end=chunks[-1].end,
        metadata=best.chunk.metadata,
        fields=chunks[0].fields,  # where the window's text starts
    )
    provenance = {
        **best.provenance,
        "window": {
            "chunk_ids": [c.id for c in chunks],
            "first_position": w.start,
            "last_position": w.stop - 1,
            "hit_ids": hit_ids,
        },
    }
    return ScoredChunk(chunk=window_chunk, score=best.score, source=best.source, provenance=provenance)


def _offsets_faithful(chunk: Chunk) -> bool:
    """True when ``start``/``end`` really locate the text (so overlaps can be trimmed exactly)."""
    return chunk.end > chunk.start and chunk.end - chunk.start == len(chunk.text)


def _join_texts(chunks: Sequence[Chunk], separator: str) -> str:
    """Concatenate in position order; drop the characters overlapping chunks share.

    When both sides' offsets are faithful and the next chunk starts at or before the
    end of the text so far, the document is continuous across the seam: the shared
    characters are cut and nothing is inserted, so the result equals the document
    slice. Otherwise (a gap, or unknown offsets) the texts are joined with ``separator``.
    """
    parts = [chunks[0].text]
    covered_end = chunks[0].end if _offsets_faithful(chunks[0]) else None
    for chunk in chunks[1:]:
        if covered_end is not None and _offsets_faithful(chunk) and chunk.start <= covered_end:
            parts.append(chunk.text[covered_end - chunk.start :])
            covered_end = max(covered_end, chunk.end)
        else:
            parts.append(separator + chunk.text)
            covered_end = chunk.end if _offsets_faithful(chunk) else None
    return "".join(parts)
