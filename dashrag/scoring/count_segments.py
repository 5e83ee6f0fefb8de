"""The chunks' term counts as segments: an immutable base, the rows added since, one lineage.

Why: an update that adds ten chunks to a million used to select the kept rows of the whole count matrix, stack the
new rows under them and save the whole matrix again (O(nonzero counts), ~0.7 GB at a million chunks); and BM25's
postings followed, made again from every count (docs/scale.md, "Segments of the keyword index"). Here the counts are
a **base** (the rows of the last fit or compaction, saved once into the saved folder's shared store by content
address, memory-mapped on load, never rewritten nor re-hashed by a later save) and a **delta** (the rows added since,
over every column: new terms get the columns after the base's). An add appends rows to the delta; when the delta
passes ``COMPACT_FRACTION`` of the base, the next add makes the whole matrix the new base (same rows, same columns).

A removal leaves the rows where they are and records them as **tombstones** (stored rows, ascending): the live rows
are the stored ones less the tombstones, in order, which is the order of the updated chunk set (kept rows in their
old order, then the added ones: ``documents/changes.py``). ``df``, each column's document frequency over the live
rows, follows every change at the cost of the rows it touches (an add's rows counted in, a removal's counted out),
so a column whose df falls to 0 is known without a pass over the base (the vectorizer then takes its term out of the
vocabulary, as a rebuild would not hold it). When the delta's rows and the tombstones together pass
``COMPACT_FRACTION`` of the base, the vectorizer makes the live rows a new base (``whole``): a rewrite, whose rows close
up (docs/scale.md, "Removals by tombstone").

``lineage`` names a numbering of the stored rows and the columns: an append or a tombstone keeps it (row ``r`` and
column ``c`` mean what they meant), a change that renumbers (a fit, a compaction with tombstones: the live rows close
up, the vocabulary is sorted again) starts a new one. A reader that keeps something per row or per column (the
in-process BM25 postings) keeps it across an update only while the lineage is the same (``rows_from`` then gives it
the stored rows it has not seen, ``tombstones`` the rows to hide).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dashrag.core.persistence import atomic_write_text, load_array, load_sparse, save_array, save_sparse
from dashrag.core.shared_files import SharedReference, keep_reference, read_reference, share_written, shared_folder
from dashrag.documents.chunk_set import rows_outside
from dashrag.errors import PersistenceError

if TYPE_CHECKING:
    import scipy.sparse as sp

#: past this fraction of the base's rows, the delta's rows become part of a new base at the next add. Why 1/64: an
#: add writes the whole delta again (its rows, ~700 bytes each), so with a base of B rows and adds of a rows each an
#: add writes about B/128 rows on average and a compaction (B rows, hashed once) comes every B/(64 a) adds: at a
#: million chunks ~8,000 rows (~5 MB) an add, one compaction in ~1,500 adds of ten. The store's deltas use 1/64 too
#: (``store/segments.COMPACT_FRACTION``).
COMPACT_FRACTION = 1 / 64
LABEL = "counts"  # the shared store's reference label (``counts.shared.json`` in the node's folder)
META = "counts.json"
DELTA = "counts_delta"
TOMBSTONES = "counts_tombstones.npy"  # the stored rows removed since the base (int64, ascending)
DF = "counts_df.npy"  # each column's document frequency over the live rows (int64)
SPARSE_PARTS = ("data", "indices", "indptr", "shape")


def new_lineage() -> str:
    return uuid.uuid4().hex


def _no_rows() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


class CountsRecord(BaseModel):
    """``counts.json``: what the arrays of a node's counts do not say themselves (folders saved before tombstones
    have none: 0)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    lineage: str
    base_rows: int = Field(ge=0)
    tombstones: int = Field(0, ge=0)


def column_counts(rows: sp.csr_matrix, n_columns: int) -> np.ndarray:
    """In how many of ``rows`` each column has a count (a block of rows' share of the document frequencies)."""
    return np.bincount(rows.indices[rows.data != 0], minlength=n_columns).astype(np.int64)


@dataclass(frozen=True)
class CountSegments:
    """Term counts (chunks x terms, float32) as ``base`` rows then ``delta`` rows, less the ``tombstones``; see the
    module docstring."""

    lineage: str
    base: sp.csr_matrix  # rows 0..base_rows-1, over the columns the base had (possibly fewer than n_columns)
    delta: sp.csr_matrix  # the rows after, over every column
    base_reference: SharedReference | None = None  # where the base is saved in the shared store (None: not yet)
    tombstones: np.ndarray = field(default_factory=_no_rows)  # stored rows removed (int64, ascending)
    df: np.ndarray = field(default_factory=_no_rows)  # per column, over the live rows (derived when not given)

    def __post_init__(self) -> None:
        if self.df.shape != (self.n_columns,):  # not given: one pass over every stored count
            df = column_counts(self.base, self.n_columns) + column_counts(self.delta, self.n_columns)
            object.__setattr__(self, "df", df - column_counts(self.stored_rows_at(self.tombstones), self.n_columns))

    @classmethod
    def whole_base(cls, counts: sp.spmatrix, lineage: str | None = None) -> CountSegments:
        """``counts`` as a base without a delta (a fit, a compaction, a removal's renumbered matrix)."""
        import scipy.sparse as sp

        counts = sp.csr_matrix(counts)
        empty = sp.csr_matrix((0, counts.shape[1]), dtype=counts.dtype)
        return cls(lineage or new_lineage(), counts, empty)

    @property
    def base_rows(self) -> int:
        return int(self.base.shape[0])

    @property
    def stored_rows(self) -> int:
        """The base's rows and the delta's, tombstoned ones included (what ``rows_from`` numbers)."""
        return self.base_rows + int(self.delta.shape[0])

    @property
    def n_rows(self) -> int:
        """The live rows: the chunks the counts are of."""
        return self.stored_rows - int(self.tombstones.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.delta.shape[1])

    def whole(self) -> sp.csr_matrix:
        """Every live row over every column, as one matrix (O(nonzero counts) when there is a delta or a
        tombstone)."""
        stored = self.rows_from(0)
        return stored[rows_outside(self.tombstones, self.stored_rows)] if self.tombstones.size else stored

    def stored_rows_at(self, rows: np.ndarray) -> sp.csr_matrix:
        """The stored rows ``rows`` (ascending) over every column, read from the base and the delta without joining
        them (O(their counts))."""
        import scipy.sparse as sp

        rows = np.asarray(rows, dtype=np.int64)
        split = int(np.searchsorted(rows, self.base_rows))
        base = self.base[rows[:split]]
        base = sp.csr_matrix((base.data, base.indices, base.indptr), shape=(base.shape[0], self.n_columns))
        return sp.vstack([base, self.delta[rows[split:] - self.base_rows]], format="csr")

    def removing(self, live: np.ndarray) -> tuple[CountSegments, np.ndarray]:
        """These counts with the live rows ``live`` (ascending) tombstoned, and the columns whose df that took to 0
        (their terms leave the vocabulary). O(the rows' counts + the stored rows' mask)."""
        live_to_stored = rows_outside(self.tombstones, self.stored_rows)  # live row i is stored row [i]
        stored = live_to_stored[np.asarray(live, dtype=np.int64)]
        gone = column_counts(self.stored_rows_at(stored), self.n_columns)
        df = self.df - gone
        emptied = np.flatnonzero((gone > 0) & (df == 0))
        return replace(self, tombstones=np.union1d(self.tombstones, stored), df=df), emptied

    def past_fraction(self) -> bool:
        """Whether the delta's rows and the tombstones together pass ``COMPACT_FRACTION`` of the base's rows."""
        changed = int(self.delta.shape[0]) + int(self.tombstones.shape[0])
        return changed > COMPACT_FRACTION * max(self.base_rows, 1)

    def rows_from(self, start: int) -> sp.csr_matrix:
        """Stored rows ``start..stored_rows-1`` over every column (tombstoned ones included): only the delta's (and
        the base's tail) when ``start`` is near the end, so what a reader has not seen costs what was added."""
        import scipy.sparse as sp

        base = self.base
        if start < self.base_rows:
            tail = base[start:] if start else base
            tail = sp.csr_matrix((tail.data, tail.indices, tail.indptr), shape=(tail.shape[0], self.n_columns))
            if self.delta.shape[0] == 0:
                return tail
            return sp.vstack([tail, self.delta], format="csr")
        return self.delta[start - self.base_rows:]

    def appended(self, rows: sp.csr_matrix) -> CountSegments:
        """These counts with ``rows`` (over ``rows.shape[1] >= n_columns`` columns) added at the end; without
        tombstones, the delta becomes the new base when it passes ``COMPACT_FRACTION`` of the base (the lineage
        stays: no row or column is renumbered). With tombstones no row may close up under the same lineage: the
        vectorizer rewrites the counts when :meth:`past_fraction` says so."""
        import scipy.sparse as sp

        delta = self.delta
        delta = sp.csr_matrix((delta.data, delta.indices, delta.indptr), shape=(delta.shape[0], rows.shape[1]))
        df = np.concatenate([self.df, np.zeros(rows.shape[1] - self.n_columns, dtype=np.int64)])
        grown = replace(self, delta=sp.vstack([delta, rows], format="csr") if delta.shape[0] else sp.csr_matrix(rows),
                        df=df + column_counts(sp.csr_matrix(rows), rows.shape[1]))
        if grown.past_fraction() and not grown.tombstones.size:
            return CountSegments.whole_base(grown.whole(), self.lineage)
        return grown

    # -- saved state ------------------------------------------------------------------------------
    def save(self, folder: Path) -> CountSegments:
        """The base into the shared store (written and hashed once; a later save that keeps it writes its
        reference alone), the delta, the tombstones, the df and the lineage into ``folder``. Returns these counts
        with the base's reference, for the next save."""
        reference = self.base_reference
        if reference is None or not keep_reference(folder, LABEL, reference):
            reference = share_written(folder, LABEL, lambda staging: _write_sparse(staging, self.base))
        save_sparse(folder, DELTA, self.delta)
        save_array(folder / DF, self.df)
        if self.tombstones.size:
            save_array(folder / TOMBSTONES, self.tombstones)
        record = CountsRecord(lineage=self.lineage, base_rows=self.base_rows, tombstones=int(self.tombstones.size))
        atomic_write_text(folder / META, record.model_dump_json(indent=2) + "\n")
        return replace(self, base_reference=reference)

    @staticmethod
    def saved_in(folder: Path) -> bool:
        return (Path(folder) / META).is_file()

    @classmethod
    def load(cls, folder: Path) -> CountSegments:
        """What :meth:`save` wrote; the base memory-mapped (pages read on demand)."""
        folder = Path(folder)
        try:
            meta = CountsRecord.model_validate_json((folder / META).read_bytes())
        except (OSError, ValidationError) as exc:
            raise PersistenceError(f"{folder / META}: not a record of segmented counts ({exc})") from None
        reference = read_reference(folder, LABEL)
        shared = shared_folder(folder, LABEL)
        if reference is None or shared is None:
            raise PersistenceError(f"{folder}: the counts' base segment is not referenced ({LABEL}.shared.json)")
        base = _load_sparse_mapped(shared)
        delta = load_sparse(folder, DELTA)
        if base.shape[0] != meta.base_rows or delta.shape[1] < base.shape[1]:
            raise PersistenceError(f"{folder}: the counts' base and delta segments disagree")
        tombstones = read_stored_rows(folder / TOMBSTONES, meta.tombstones, base.shape[0] + delta.shape[0])
        # folders saved before the df was: derived (__post_init__)
        df = read_column_counts(folder / DF, delta.shape[1]) if (folder / DF).is_file() else _no_rows()
        return cls(meta.lineage, base, delta, reference, tombstones, df)


def read_stored_rows(path: Path, count: int, stored: int) -> np.ndarray:
    """Tombstones as saved: ``count`` distinct stored rows below ``stored``, ascending (none read when 0); anything
    else is a PersistenceError naming the file, never a wrong score."""
    rows = np.asarray(load_array(path)) if count else _no_rows()
    if rows.shape != (count,) or rows.dtype != np.int64 or (count and (
            rows[0] < 0 or rows[-1] >= stored or not bool(np.all(np.diff(rows) > 0)))):
        raise PersistenceError(f"{path}: not {count} distinct stored rows below {stored}, ascending")
    return rows


def read_column_counts(path: Path, n_columns: int) -> np.ndarray:
    """A saved count per column (a df): ``n_columns`` int64 values, none negative."""
    counts = np.asarray(load_array(path))
    if counts.shape != (n_columns,) or counts.dtype != np.int64 or bool((counts < 0).any()):
        raise PersistenceError(f"{path}: not a count per column of {n_columns} columns")
    return counts


def _write_sparse(folder: Path, matrix: sp.csr_matrix) -> list[str]:
    arrays = {"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr,
              "shape": np.asarray(matrix.shape, dtype=np.int64)}
    for part, array in arrays.items():
        save_array(folder / f"{part}.npy", array)
    return [f"{part}.npy" for part in SPARSE_PARTS]


def _load_sparse_mapped(folder: Path) -> sp.csr_matrix:
    import scipy.sparse as sp

    data, indices, indptr, shape = (np.asarray(load_array(folder / f"{part}.npy", mmap=part != "shape"))
                                    for part in SPARSE_PARTS)
    try:
        return sp.csr_matrix((data, indices, indptr), shape=tuple(int(x) for x in shape))
    except (ValueError, TypeError) as exc:
        raise PersistenceError(f"{folder}: inconsistent sparse matrix ({exc})") from None
