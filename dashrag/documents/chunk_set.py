"""``ChunkSet``: a corpus's chunks, indexed every way a retriever needs them.

Leaves score "rows" (0..n-1, the order of the chunk ids); this class maps rows to
chunk ids and back, finds a chunk by ``(document_id, position)`` for window
expansion, and fingerprints the whole set so a saved retriever can tell it is
being loaded against the corpus it was built on.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from dashrag.documents.model import Chunk, Metadata, normalise_categories
from dashrag.errors import CorpusError, UnknownChunkError

if TYPE_CHECKING:  # the filter language is imported by the first filter
    from dashrag.filters.columns import MetadataColumns
    from dashrag.filters.masks import FilterMasks


class ChunkSet:
    def __init__(self, chunks: Iterable[Chunk], fingerprint: str | None = None):
        """``fingerprint``: the set's fingerprint where it is already known (a load that found the store
        file unchanged since the save that computed it), so it is not re-hashed."""
        if fingerprint is not None:
            self.__dict__["fingerprint"] = fingerprint  # the cached_property's own slot
        self.chunks: list[Chunk] = sorted(chunks, key=lambda c: c.id)
        if not self.chunks:
            raise CorpusError("the corpus has no chunks (no document had any text)")
        self.ids = np.fromiter((c.id for c in self.chunks), dtype=np.int64, count=len(self.chunks))
        self._row_of_id = {int(c.id): row for row, c in enumerate(self.chunks)}
        if len(self._row_of_id) != len(self.ids):  # (not np.unique: its first call imports numpy.ma, 30 ms)
            raise CorpusError("chunk ids are not unique")
        self._row_of_position = {(c.document_id, c.position): row for row, c in enumerate(self.chunks)}
        doc_ids: dict[str, int] = {}
        for c in self.chunks:
            doc_ids.setdefault(c.document_id, len(doc_ids))
        self._document_number = doc_ids
        self.document_ids: list[str] = list(doc_ids)
        self.document_index = np.fromiter(
            (doc_ids[c.document_id] for c in self.chunks), dtype=np.int64, count=len(self.chunks)
        )
        self.document_sizes = np.bincount(self.document_index, minlength=len(doc_ids))
        first_rows: dict[str, int] = {}
        for row, c in enumerate(self.chunks):
            first_rows.setdefault(c.document_id, row)
        self.document_metadata: list[Metadata] = [self.chunks[first_rows[d]].metadata for d in self.document_ids]
        self.document_categories = [normalise_categories(m) for m in self.document_metadata]

    def __len__(self) -> int:
        return len(self.chunks)

    @property
    def texts(self) -> list[str]:
        return [c.text for c in self.chunks]

    def rows_of(self, chunk_ids: Sequence[int]) -> np.ndarray:
        """Rows of the given chunk ids; unknown ids are an error that lists them."""
        rows, unknown = [], []
        for cid in chunk_ids:
            row = self._row_of_id.get(int(cid))
            (unknown.append(cid) if row is None else rows.append(row))
        if unknown:
            shown = ", ".join(map(str, unknown[:10])) + (" ..." if len(unknown) > 10 else "")
            raise UnknownChunkError(f"unknown chunk id(s): {shown}")
        return np.asarray(rows, dtype=np.int64)

    def by_id(self, chunk_id: int) -> Chunk:
        return self.chunks[int(self.rows_of([chunk_id])[0])]

    def at(self, document_id: str, position: int) -> Chunk | None:
        row = self._row_of_position.get((document_id, position))
        return None if row is None else self.chunks[row]

    def document_size(self, document_id: str) -> int:
        """How many chunks the document has (0 for an unknown document)."""
        number = self._document_number.get(document_id)
        return 0 if number is None else int(self.document_sizes[number])

    @cached_property
    def category_names(self) -> list[str]:
        return sorted({name for cats in self.document_categories for name in cats})

    @cached_property
    def metadata_columns(self) -> MetadataColumns:
        """The documents' metadata as typed columns (built once), what filter masks are computed over."""
        from dashrag.filters.columns import MetadataColumns

        return MetadataColumns(self.document_metadata)

    @cached_property
    def filter_masks(self) -> FilterMasks:
        """The masks of the filters asked of this chunk set, each computed once (``filters/masks.py``)."""
        from dashrag.filters.masks import FilterMasks

        return FilterMasks(self.metadata_columns, self.document_index)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over every chunk's id, document, position, offsets, text and metadata.

        The metadata enters as its categories (what stores written before metadata held), then the
        other fields only where there are any, so a corpus of categories has the fingerprint it had.
        """
        digest = hashlib.sha256()
        for c in self.chunks:
            categories = normalise_categories(c.metadata)
            record = [
                c.id,
                c.document_id,
                c.position,
                c.start,
                c.end,
                c.text,
                sorted((k, list(v)) for k, v in categories.items()),
            ]
            others = {k: v for k, v in c.metadata.items() if k not in categories or not isinstance(v, (list, tuple))}
            if others:
                record.append(sorted(others.items()))
            digest.update(json.dumps(record, ensure_ascii=False).encode("utf-8"))
            digest.update(b"\n")
        return digest.hexdigest()
