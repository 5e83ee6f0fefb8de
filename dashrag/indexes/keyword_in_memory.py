"""InMemoryKeywordIndex: the BM25 postings as arrays in this process (the default).

The BM25 node scores with them itself (``scoring/bm25.py``: one scatter-add of each
query term's posting list, then the shared top-k selection). The postings hold what derives
the weights at query time (``scoring/bm25_query_time.py``: each posting's part that the corpus's
statistics never move, each chunk's length; the statistics once per state), so that an update
need not weigh every posting again (docs/scale.md, "Query-time weights"). Saved as
``first.npy``, ``second.npy``, ``doc_ids.npy``, ``term_ptr.npy``, ``lengths.npy`` and
``weights.json`` (``"layout": "query-time"``) in the node's folder, memory-mapped on load; a folder
saved with eager weights (``data.npy``, ``nonoccurrence.npy``, no layout) loads and scores as it did.

Segments (``"layout": "segments"``, ``scoring/bm25_segments.py``): the postings of the rows of the last fit or
compaction are a **base**, saved once into the saved folder's shared store by content address
(``models/<digest>/``, referenced by ``postings.shared.json``), memory-mapped, never rewritten nor re-hashed by a
later save; an add makes the postings of its rows alone, the **delta** (``delta_*.npy`` in the node's folder),
and the state's statistics from both. When the delta passes ``compact_fraction`` of the base's rows, or the
vectorizer renumbered its rows or columns (a fit, or the counts' rewrite: a new lineage, ``scoring/count_segments.py``),
the postings are made again from every count and become the new base (docs/scale.md, "Segments of the keyword
index"). A removal leaves the stored rows where they are: the counts' tombstones (``tombstone_rows.npy``, and per term
how many of those rows it occurs in, ``tombstone_df.npy``) take them out of the statistics and of every query's
postings (``scoring/bm25_tombstones.py``) until the counts' rewrite (a new lineage) makes a base of the live rows
(docs/scale.md, "Removals by tombstone").

A selective filter gets posting lists of its own: the first query under a filter keeping fewer
than half the chunks cuts the postings down to its chunks (``scoring.restrict_weights``), and
later queries under it add only those (a 5% filter, a twentieth of the work; the same scores).
They are kept while the chunk set keeps the filter's mask (``filters/masks.py``), at most as many
bytes as the whole index, the least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dashrag.core.params import ComponentParams
from dashrag.core.persistence import atomic_write_json, atomic_write_text, load_array, load_json, save_array
from dashrag.core.ranking import SCORE_KEPT_ROWS_BELOW
from dashrag.core.registry import register
from dashrag.core.shared_files import SharedReference, keep_reference, read_reference, share_written, shared_folder
from dashrag.errors import ConfigError, CorpusError, PersistenceError, RetrievalError
from dashrag.indexes.base import IndexIdentity
from dashrag.indexes.keyword_base import KeywordIndex
from dashrag.scoring import bm25_query_time, bm25_segments
from dashrag.scoring.bm25 import BM25Parameters, BM25Weights, PostingWeights, posting_problems
from dashrag.scoring.bm25_segments import PostingSegment, segment_weights
from dashrag.scoring.bm25_tombstones import TOMBSTONE_DF, TOMBSTONE_ROWS, Tombstones
from dashrag.scoring.count_segments import column_counts, read_column_counts, read_stored_rows

if TYPE_CHECKING:
    from dashrag.scoring.count_segments import CountSegments

EAGER_ARRAYS = ("data", "doc_ids", "term_ptr", "nonoccurrence")
# weights.json's "layout" → how the saved arrays are read (folders saved before the query-time layout have none)
LAYOUTS: dict[str, tuple[tuple[str, ...], Any]] = {
    "eager": (EAGER_ARRAYS, BM25Weights.from_arrays),
    bm25_query_time.LAYOUT: (bm25_query_time.QueryTimeWeights.ARRAYS, bm25_query_time.QueryTimeWeights.from_arrays),
}
KEPT_MASKS = 64  # masks whose answer (their posting lists, or None) is remembered
BASE_LABEL = "postings"  # the base segment's reference in the node's folder (postings.shared.json)
DELTA_PREFIX = "delta_"


class SegmentsRecord(BaseModel):
    """``weights.json`` of the segments layout: what the arrays do not say themselves (saved and read through this
    one model). ``n_docs``: the stored rows the postings cover, base's then delta's, tombstoned ones included
    (``tombstones`` of them; folders saved before tombstones have none)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    layout: Literal["segments"] = "segments"  # bm25_segments.LAYOUT
    lineage: str
    base_rows: int = Field(ge=1)
    n_docs: int = Field(ge=1)
    tombstones: int = Field(0, ge=0)
    params: dict[str, Any]


class InMemoryKeywordIndexParams(ComponentParams):
    compact_fraction: float = Field(1 / 64, ge=0.0, le=1.0, description=(
        "When the chunks added since the postings' base pass this fraction of the base's chunks, an update makes "
        "every posting again as the new base; below it, an add makes the postings of its chunks alone. "
        "0: every update makes them all again."))


@register(kind="keyword_index", icon="Cpu", category="index",
          en=("In-process term weights", "BM25 posting lists held in this process (numpy), scored exactly."),
          es=("Pesos de términos en proceso",
              "Listas de BM25 en este proceso (numpy), con puntuación exacta."),
          representation="in-process BM25")
class InMemoryKeywordIndex(KeywordIndex[InMemoryKeywordIndexParams]):
    in_process = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._weights: PostingWeights | None = None
        # the segments (None: weights loaded from a layout without them, saved as they were until an update)
        self._base: PostingSegment | None = None
        self._delta: PostingSegment | None = None
        self._lineage: str | None = None  # the counts' numbering the base's rows and columns follow
        self._base_reference: SharedReference | None = None  # where the base is saved (None: not yet)
        self._tombstones: Tombstones | None = None  # the stored rows removed since the base (None: none)
        self._cut_down: OrderedDict[int, tuple[np.ndarray, tuple[np.ndarray, PostingWeights] | None]] = OrderedDict()
        self._lock = threading.Lock()  # a service answers from several threads

    def weigh(self, counts: CountSegments, params: BM25Parameters, identity: IndexIdentity) -> PostingWeights:
        """The postings of the rows added since the base alone, the removed ones tombstoned, when the counts keep
        the base's numbering and the delta and the tombstones stay under ``compact_fraction`` of it; else every
        posting again (of the counts' stored rows: their tombstones stay until the counts' rewrite), as a new base."""
        if counts.n_rows == 0:
            raise CorpusError("cannot build a BM25 index over zero documents")
        base = self._base
        added = counts.stored_rows - (0 if base is None else base.n_rows)
        if base is None or counts.lineage != self._lineage or added < 0 \
                or added + counts.tombstones.size > self.params.compact_fraction * base.n_rows:
            base, added = PostingSegment.of_counts(counts.rows_from(0), params, 0), 0
            self._base, self._base_reference = base, None
        self._lineage = counts.lineage
        self._delta = PostingSegment.of_counts(counts.rows_from(base.n_rows), params, base.n_rows) if added else None
        self._tombstones = None if not counts.tombstones.size else Tombstones(
            counts.tombstones, column_counts(counts.stored_rows_at(counts.tombstones), counts.n_columns))
        weights = segment_weights(base, self._delta, params, self._tombstones)
        self._set(weights)
        return weights

    def add(self, weights: PostingWeights, identity: IndexIdentity) -> None:
        """Hold ``weights`` as they are (eager, or query-time)."""
        self._set(weights)

    def _set(self, weights: PostingWeights) -> None:
        with self._lock:
            self._weights = weights
            self._cut_down.clear()

    def postings_of(self, mask: np.ndarray) -> tuple[np.ndarray, PostingWeights] | None:
        """(the rows ``mask`` keeps, ascending; their posting lists alone) when it keeps fewer than
        ``SCORE_KEPT_ROWS_BELOW`` of the rows, else None. For a mask that lives across queries (a
        filter's: the chunk set keeps it), worked out on its first use and kept."""
        with self._lock:
            found = self._cut_down.get(id(mask))
            if found is not None and found[0] is mask:
                self._cut_down.move_to_end(id(mask))
                return found[1]
            weights = self.weights
        rows = np.flatnonzero(mask)
        cut = None if rows.size >= SCORE_KEPT_ROWS_BELOW * mask.size else (rows, weights.restricted(rows))
        with self._lock:
            if self._weights is weights:  # not replaced meanwhile
                self._cut_down[id(mask)] = (mask, cut)  # the mask held, so its id is not reused
                self._drop_beyond(_nbytes(weights))
        return cut

    def _drop_beyond(self, limit: int) -> None:
        """Forget the least recently used masks until the posting lists kept hold at most ``limit`` bytes
        and at most ``KEPT_MASKS`` masks are remembered."""
        def size(cut: tuple[np.ndarray, PostingWeights] | None) -> int:
            return 0 if cut is None else _nbytes(cut[1])

        held = sum(size(cut) for _, cut in self._cut_down.values())
        while self._cut_down and (held > limit or len(self._cut_down) > KEPT_MASKS):
            held -= size(self._cut_down.popitem(last=False)[1][1])

    @property
    def weights(self) -> PostingWeights:
        if self._weights is None:
            raise RetrievalError(f"{self.component_name}: holds no weights yet (the BM25 node is not fitted)")
        return self._weights

    def save_into(self, folder: Path) -> None:
        weights = self.weights
        if self._base is None:  # loaded from a layout without segments, not updated since: saved as it was
            for name, array in weights.to_arrays().items():
                save_array(folder / f"{name}.npy", array)
            atomic_write_json(folder / "weights.json", weights.meta())
            return
        base = self._base
        reference = self._base_reference
        if reference is None or not keep_reference(folder, BASE_LABEL, reference):
            reference = share_written(folder, BASE_LABEL, lambda staging: _write_arrays(staging, base.arrays()))
        self._base_reference = reference
        if self._delta is not None:
            _write_arrays(folder, self._delta.arrays(), DELTA_PREFIX)
        if self._tombstones is not None:
            _write_arrays(folder, self._tombstones.arrays())
        assert self._lineage is not None  # set with the base
        stored = base.n_rows + (0 if self._delta is None else self._delta.n_rows)
        record = SegmentsRecord(lineage=self._lineage, base_rows=base.n_rows, n_docs=stored,
                                tombstones=0 if self._tombstones is None else int(self._tombstones.rows.shape[0]),
                                params=weights.meta()["params"])
        atomic_write_text(folder / "weights.json", record.model_dump_json(indent=2) + "\n")

    def load_from(self, folder: Path, identity: IndexIdentity) -> None:
        # memory-mapped (pages load on demand), seen as plain arrays: slicing an np.memmap runs Python code
        # per slice, which was a third of a loaded tree's batched query time (docs/performance.md)
        meta = load_json(folder / "weights.json")
        layout = meta.get("layout", "eager") if isinstance(meta, dict) else None
        self._base = self._delta = None
        self._lineage = self._base_reference = self._tombstones = None
        if layout == bm25_segments.LAYOUT:
            weights = self._load_segments(folder, meta)
        elif layout in LAYOUTS:
            names, read = LAYOUTS[layout]
            arrays = {name: np.asarray(load_array(folder / f"{name}.npy", mmap=True)) for name in names}
            weights = read(arrays, meta)
        else:
            raise PersistenceError(f"{folder / 'weights.json'}: unknown layout {layout!r} of the BM25 state")
        n_chunks = len(self.require_infra().chunks)
        if weights.n_docs != n_chunks:
            raise PersistenceError(f"{folder}: BM25 state covers {weights.n_docs} chunks, the corpus has {n_chunks}")
        if weights.vocab_size != identity.dimension:
            raise PersistenceError(f"{folder}: BM25 state and vocabulary disagree on the number of terms")
        self._set(weights)


    def _load_segments(self, folder: Path, meta: dict) -> PostingWeights:
        """The base from the shared store, the delta and the tombstones from ``folder``, memory-mapped and checked
        (a truncated or edited state is a PersistenceError, never a wrong score)."""
        try:
            record = SegmentsRecord.model_validate(meta)
            params = BM25Parameters(**record.params)
        except (TypeError, ValueError, ValidationError, ConfigError) as exc:
            raise PersistenceError(f"{folder / 'weights.json'}: incomplete or invalid BM25 segments ({exc})") from None
        shared = shared_folder(folder, BASE_LABEL)
        if shared is None:
            raise PersistenceError(f"{folder}: the BM25 postings' base segment is not referenced "
                                   f"({BASE_LABEL}.shared.json)")
        base_rows, stored = record.base_rows, record.n_docs
        base = _read_segment(shared, "", 0, base_rows)
        delta = _read_segment(folder, DELTA_PREFIX, base_rows, stored) if stored > base_rows else None
        if delta is not None and delta.n_columns < base.n_columns:
            raise PersistenceError(f"{folder}: the BM25 postings' delta covers fewer terms than its base")
        n_columns = base.n_columns if delta is None else delta.n_columns
        tombstones = _read_tombstones(folder, record.tombstones, stored, n_columns) if record.tombstones else None
        self._base, self._delta, self._lineage, self._tombstones = base, delta, record.lineage, tombstones
        self._base_reference = read_reference(folder, BASE_LABEL)
        return segment_weights(base, delta, params, tombstones)


def _write_arrays(folder: Path, arrays: dict[str, np.ndarray], prefix: str = "") -> list[str]:
    for name, array in arrays.items():
        save_array(folder / f"{prefix}{name}.npy", array)
    return [f"{prefix}{name}.npy" for name in arrays]


def _read_segment(folder: Path, prefix: str, first_row: int, end_row: int) -> PostingSegment:
    """One segment's arrays (memory-mapped), holding the postings of rows ``first_row..end_row-1``."""
    parts = {name: np.asarray(load_array(folder / f"{prefix}{name}.npy", mmap=True))
             for name in PostingSegment.ARRAYS}
    first, second, doc_ids, term_ptr, lengths = (parts[name] for name in PostingSegment.ARRAYS)
    nnz = first.shape[0] if first.ndim == 1 else -1
    problems = posting_problems(doc_ids, term_ptr, nnz, end_row)
    if nnz < 0 or second.shape != (nnz,) or doc_ids.shape != (nnz,):
        problems.append("the posting arrays differ in length")
    if lengths.shape != (end_row - first_row,):
        problems.append(f"lengths cover {lengths.shape} chunks, the segment {end_row - first_row}")
    if nnz > 0 and doc_ids.shape == (nnz,) and doc_ids.min() < first_row:
        problems.append("a posting names a chunk of another segment")
    if problems:
        raise PersistenceError(f"{folder}: BM25 postings ({prefix or 'base'}): " + "; ".join(problems))
    return PostingSegment(first, second, doc_ids, term_ptr, lengths)


def _read_tombstones(folder: Path, count: int, stored: int, n_columns: int) -> Tombstones:
    """The saved tombstones, checked: ``count`` distinct stored rows ascending, and a count per term."""
    return Tombstones(read_stored_rows(folder / f"{TOMBSTONE_ROWS}.npy", count, stored),
                      read_column_counts(folder / f"{TOMBSTONE_DF}.npy", n_columns))


def _nbytes(weights: PostingWeights) -> int:
    """The bytes of the posting arrays (what a filter's own postings are measured against)."""
    return sum(array.nbytes for name, array in weights.to_arrays().items() if not name.endswith("term_ptr"))
