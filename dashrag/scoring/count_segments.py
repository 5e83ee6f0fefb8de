"""The chunks' term counts as segments: an immutable base, the rows added since, one lineage.

Why: an update that adds ten chunks to a million used to select the kept rows of the whole count matrix, stack the
new rows under them and save the whole matrix again (O(nonzero counts), ~0.7 GB at a million chunks); and BM25's
postings followed, made again from every count (docs/scale.md, "Segments of the keyword index"). Here the counts are
a **base** (the rows of the last fit or compaction, saved once into the saved folder's shared store by content
address, memory-mapped on load, never rewritten nor re-hashed by a later save) and a **delta** (the rows added since,
over every column: new terms get the columns after the base's). An add appends rows to the delta; when the delta
passes ``COMPACT_FRACTION`` of the base, the next add makes the whole matrix the new base (same rows, same columns).

``lineage`` names a numbering of the rows and the columns: an append keeps it (row ``r`` and column ``c`` mean what
they meant), a change that renumbers (a fit, a removal: its kept rows close up, its vocabulary is sorted again)
starts a new one. A reader that keeps something per row or per column (the in-process BM25 postings) keeps it
across an update only while the lineage is the same (``rows_from`` then gives it the rows it has not seen).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dashrag.core.persistence import atomic_write_json, load_array, load_json, load_sparse, save_array, save_sparse
from dashrag.core.shared_files import SharedReference, keep_reference, read_reference, share_written, shared_folder
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
SPARSE_PARTS = ("data", "indices", "indptr", "shape")


def new_lineage() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class CountSegments:
    """Term counts (chunks x terms, float32) as ``base`` rows then ``delta`` rows; see the module docstring."""

    lineage: str
    base: sp.csr_matrix  # rows 0..base_rows-1, over the columns the base had (possibly fewer than n_columns)
    delta: sp.csr_matrix  # the rows after, over every column
    base_reference: SharedReference | None = None  # where the base is saved in the shared store (None: not yet)

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
    def n_rows(self) -> int:
        return self.base_rows + int(self.delta.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.delta.shape[1])

    def whole(self) -> sp.csr_matrix:
        """Every row over every column, as one matrix (O(nonzero counts) when there is a delta)."""
        return self.rows_from(0)

    def rows_from(self, start: int) -> sp.csr_matrix:
        """Rows ``start..n_rows-1`` over every column: only the delta's (and the base's tail) when ``start`` is near
        the end, so what a reader has not seen costs what was added."""
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
        """These counts with ``rows`` (over ``rows.shape[1] >= n_columns`` columns) added at the end; the delta
        becomes the new base when it passes ``COMPACT_FRACTION`` of the base (the lineage stays: no row or column
        is renumbered)."""
        import scipy.sparse as sp

        delta = self.delta
        delta = sp.csr_matrix((delta.data, delta.indices, delta.indptr), shape=(delta.shape[0], rows.shape[1]))
        grown = replace(self, delta=sp.vstack([delta, rows], format="csr") if delta.shape[0] else sp.csr_matrix(rows))
        if grown.delta.shape[0] > COMPACT_FRACTION * max(self.base_rows, 1):
            return CountSegments.whole_base(grown.whole(), self.lineage)
        return grown

    # -- saved state ------------------------------------------------------------------------------
    def save(self, folder: Path) -> CountSegments:
        """The base into the shared store (written and hashed once; a later save that keeps it writes its
        reference alone), the delta and the lineage into ``folder``. Returns these counts with the base's
        reference, for the next save."""
        reference = self.base_reference
        if reference is None or not keep_reference(folder, LABEL, reference):
            reference = share_written(folder, LABEL, lambda staging: _write_sparse(staging, self.base))
        save_sparse(folder, DELTA, self.delta)
        atomic_write_json(folder / META, {"lineage": self.lineage, "base_rows": self.base_rows})
        return replace(self, base_reference=reference)

    @staticmethod
    def saved_in(folder: Path) -> bool:
        return (Path(folder) / META).is_file()

    @classmethod
    def load(cls, folder: Path) -> CountSegments:
        """What :meth:`save` wrote; the base memory-mapped (pages read on demand)."""
        folder = Path(folder)
        meta = load_json(folder / META)
        if not isinstance(meta, dict) or not isinstance(meta.get("lineage"), str) \
                or not isinstance(meta.get("base_rows"), int):
            raise PersistenceError(f"{folder / META}: not a record of segmented counts")
        reference = read_reference(folder, LABEL)
        shared = shared_folder(folder, LABEL)
        if reference is None or shared is None:
            raise PersistenceError(f"{folder}: the counts' base segment is not referenced ({LABEL}.shared.json)")
        base = _load_sparse_mapped(shared)
        delta = load_sparse(folder, DELTA)
        if base.shape[0] != meta["base_rows"] or delta.shape[1] < base.shape[1]:
            raise PersistenceError(f"{folder}: the counts' base and delta segments disagree")
        return cls(meta["lineage"], base, delta, reference)


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
