"""``ChunkSet``: a corpus's chunks, indexed every way a retriever needs them.

Leaves score "rows" (0..n-1, the order of the chunk ids); this class maps rows to
chunk ids and back, finds a chunk by ``(document_id, position)`` for window
expansion, and fingerprints the whole set so a saved retriever can tell it is
being loaded against the corpus it was built on.
"""

from __future__ import annotations

import copy
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence, overload

import numpy as np

from dashrag.documents.fingerprint import ADDITIVE, SCHEMES, chunk_lines, shifted
from dashrag.documents.fingerprint import fingerprint as fingerprint_of
from dashrag.documents.model import Chunk, Metadata, normalise_categories
from dashrag.errors import CorpusError, UnknownChunkError

if TYPE_CHECKING:  # the filter language is imported by the first filter
    from dashrag.filters.columns import MetadataColumns
    from dashrag.filters.masks import FilterMasks


StoredRow = tuple[int, str, int, str, int, int]  # a store's chunk row: id, document id, position, text, start, end


class StoredChunks(Sequence[Chunk]):
    """A store's chunk rows read as :class:`Chunk` objects, each made when it is first read.

    Why: a cold query reads every row of the store but shows ten chunks; making a frozen
    Chunk for each of SciFact's 5,183 rows was a fifth of loading its keyword tree
    (docs/performance.md). What is kept is the rows as read; a Chunk, once made, is kept too.
    """

    def __init__(self, rows: Sequence[StoredRow], metadata: Mapping[str, Metadata],
                 fields: Mapping[int, Metadata] | None = None):
        self._rows = rows
        self._metadata = metadata
        self._fields = fields or {}
        self._made: list[Chunk | None] = [None] * len(rows)

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, row: int) -> Chunk: ...

    @overload
    def __getitem__(self, row: slice) -> list[Chunk]: ...

    def __getitem__(self, row: int | slice) -> Chunk | list[Chunk]:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        chunk = self._made[row]
        if chunk is None:
            i, document_id, position, text, start, end = self._rows[row]
            chunk = self._made[row] = Chunk(id=i, document_id=document_id, position=position, text=text, start=start,
                                            end=end, metadata=self._metadata.get(document_id, {}),
                                            fields=self._fields.get(i, {}))
        return chunk

    @property
    def rows(self) -> Sequence[StoredRow]:
        """The rows as read (what a fingerprint hashes, without making chunks)."""
        return self._rows

    def column(self, index: int) -> list[Any]:
        """One field of every row (0 the ids, 1 the document ids, ...), without making chunks."""
        return [r[index] for r in self._rows]


class ChunkSet:
    def __init__(self, chunks: Iterable[Chunk], fingerprint: str | None = None, scheme: int = ADDITIVE):
        """``fingerprint``: the set's fingerprint where it is already known (a load that found the store
        file unchanged since the save that computed it), so it is not re-hashed; ``scheme``: how it is
        computed (``documents/fingerprint.py``; a folder of format 1 was fingerprinted sequentially)."""
        ordered = sorted(chunks, key=lambda c: c.id)
        self._set_up(ordered, [c.id for c in ordered], [c.document_id for c in ordered],
                     {c.document_id: c.metadata for c in reversed(ordered)}, fingerprint,
                     {c.id: c.fields for c in ordered if c.fields}, scheme)

    @classmethod
    def from_rows(cls, rows: Sequence[StoredRow], metadata: Mapping[str, Metadata],
                  fingerprint: str | None = None, fields: Mapping[int, Metadata] | None = None,
                  scheme: int = ADDITIVE) -> ChunkSet:
        """A store's rows (ascending ids), its documents' metadata and the chunks' own fields (by chunk id, only
        the chunks that have any); the Chunk objects are made as they are read (:class:`StoredChunks`)."""
        chunks = StoredChunks(rows, metadata, fields)
        chunk_set = cls.__new__(cls)
        chunk_set._set_up(chunks, chunks.column(0), chunks.column(1), metadata, fingerprint, fields or {}, scheme)
        return chunk_set

    def rows_without(self, document_ids: Iterable[str]) -> np.ndarray:
        """The rows (ascending) of every chunk but those of ``document_ids`` (ids not here are ignored)."""
        numbers = [n for n in map(self._document_number.get, document_ids) if n is not None]
        return np.flatnonzero(~np.isin(self.document_index, numbers)).astype(np.int64)

    def changed(self, kept_rows: np.ndarray, added: Sequence[Chunk]) -> ChunkSet:
        """The chunk set of an update: the rows ``kept_rows`` (ascending, every row of the documents they keep:
        :meth:`rows_without`) then ``added`` (ids above every one here). A set read from a store stays rows (no
        chunk is made for the kept ones). Its fingerprint is additive, shifted from this one's by the chunks that
        changed where this one's is additive too."""
        fingerprint_ = self._changed_fingerprint(kept_rows, added)
        if not isinstance(self.chunks, StoredChunks):
            return ChunkSet([self.chunks[r] for r in kept_rows.tolist()] + list(added), fingerprint_)
        kept_numbers = np.unique(self.document_index[kept_rows]).tolist()  # ascending: their order of appearance
        renumbered = np.full(len(self.document_ids), -1, dtype=np.int64)
        renumbered[kept_numbers] = np.arange(len(kept_numbers))
        document_ids = [self.document_ids[n] for n in kept_numbers]
        metadata = [self.document_metadata[n] for n in kept_numbers]
        joined: dict[str, int] = {}
        for c in added:
            if c.document_id not in joined:
                joined[c.document_id] = len(document_ids)
                document_ids.append(c.document_id)
                metadata.append(c.metadata)
        document_index = np.concatenate([renumbered[self.document_index[kept_rows]],
                                         np.array([joined[c.document_id] for c in added], dtype=np.int64)])
        ids = np.concatenate([self.ids[kept_rows], np.array([c.id for c in added], dtype=np.int64)])
        stored = self.chunks.rows
        rows = [stored[r] for r in kept_rows.tolist()] + [_row(c) for c in added]
        fields = dict(self.chunk_fields)
        if fields:
            for gone in np.setdiff1d(self.ids, ids[:len(kept_rows)], assume_unique=True).tolist():
                fields.pop(gone, None)
        fields.update({c.id: c.fields for c in added if c.fields})
        chunk_set = ChunkSet.__new__(ChunkSet)
        chunk_set._take(StoredChunks(rows, dict(zip(document_ids, metadata)), fields), ids, document_ids,
                        document_index, metadata, fingerprint_, fields, ADDITIVE)
        return chunk_set

    def _set_up(self, chunks: Sequence[Chunk], ids: list[int], document_of_row: list[str],
                metadata: Mapping[str, Metadata], fingerprint: str | None,
                chunk_fields: Mapping[int, Metadata], scheme: int) -> None:
        doc_ids: dict[str, int] = {}
        for d in document_of_row:
            doc_ids.setdefault(d, len(doc_ids))
        document_index = np.fromiter(map(doc_ids.__getitem__, document_of_row), dtype=np.int64,
                                     count=len(document_of_row))
        self._take(chunks, np.fromiter(ids, dtype=np.int64, count=len(ids)), list(doc_ids), document_index,
                   [metadata.get(d, {}) for d in doc_ids], fingerprint, chunk_fields, scheme)

    def _take(self, chunks: Sequence[Chunk], ids: np.ndarray, document_ids: list[str], document_index: np.ndarray,
              document_metadata: list[Metadata], fingerprint: str | None, chunk_fields: Mapping[int, Metadata],
              scheme: int) -> None:
        """Hold the chunks and their arrays: ``ids`` ascending, ``document_ids`` in order of first appearance and
        ``document_index`` each row's number among them (what an update derives from the old set's arrays)."""
        self.fingerprint_scheme = _checked_scheme(scheme)
        if fingerprint is not None:
            self.__dict__["fingerprint"] = fingerprint  # the cached_property's own slot
        if not chunks:
            raise CorpusError("the corpus has no chunks (no document had any text)")
        self.chunks: Sequence[Chunk] = chunks
        self.ids = ids
        if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):  # in id order: unique iff increasing
            raise CorpusError("chunk ids are not unique")
        self._document_number = dict(zip(document_ids, range(len(document_ids))))
        self.document_ids: list[str] = document_ids
        self.document_index = document_index
        self.document_sizes = np.bincount(document_index, minlength=len(document_ids))
        self.document_metadata: list[Metadata] = document_metadata
        self.chunk_fields: Mapping[int, Metadata] = chunk_fields  # by chunk id; only chunks with fields

    @cached_property
    def document_categories(self) -> list[dict[str, tuple[str, ...]]]:
        return [normalise_categories(m) for m in self.document_metadata]

    @cached_property
    def _row_of_position(self) -> dict[tuple[str, int], int]:
        return {(c.document_id, c.position): row for row, c in enumerate(self.chunks)}

    def __len__(self) -> int:
        return len(self.chunks)

    @property
    def texts(self) -> list[str]:
        return [c.text for c in self.chunks]

    def rows_of(self, chunk_ids: Sequence[int]) -> np.ndarray:
        """Rows of the given chunk ids; unknown ids are an error that lists them."""
        try:
            wanted = np.asarray(chunk_ids, dtype=np.int64).reshape(-1)
        except (OverflowError, TypeError, ValueError):  # not integers, or beyond any chunk id
            raise UnknownChunkError(f"unknown chunk id(s): {_shown(list(chunk_ids))}") from None
        rows = np.minimum(np.searchsorted(self.ids, wanted), len(self.ids) - 1)  # the ids are ascending
        unknown = wanted[self.ids[rows] != wanted]
        if unknown.size:
            raise UnknownChunkError(f"unknown chunk id(s): {_shown(unknown.tolist())}")
        return rows

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

    def fields_by_document(self) -> list[tuple[str, Metadata]]:
        """``(document id, fields)`` of each chunk with its own fields, in chunk order."""
        if not self.chunk_fields:
            return []
        rows = self.rows_of(list(self.chunk_fields))
        return [(self.document_ids[n], self.chunk_fields[i])
                for i, n in zip(self.chunk_fields, self.document_index[rows].tolist())]

    @property
    def filters_by_row(self) -> bool:
        """Whether filters hold per chunk row: some chunk has its own fields (a page, a section), so two chunks
        of one document may answer a filter differently. Otherwise per document (one row per document in the
        columns: what a corpus without structure costs)."""
        return bool(self.chunk_fields)

    @cached_property
    def metadata_columns(self) -> MetadataColumns:
        """The metadata as typed columns (built once), what filter masks are computed over: one row per
        document, or per chunk row when chunks have their own fields (:attr:`filters_by_row`)."""
        from dashrag.filters.columns import MetadataColumns

        if not self.filters_by_row:
            return MetadataColumns(self.document_metadata)
        own = self.chunk_fields
        return MetadataColumns([{**self.document_metadata[n], **own[i]} if i in own else self.document_metadata[n]
                                for i, n in zip(self.ids.tolist(), self.document_index.tolist())])

    @cached_property
    def filter_masks(self) -> FilterMasks:
        """The masks of the filters asked of this chunk set, each computed once (``filters/masks.py``)."""
        from dashrag.filters.masks import FilterMasks

        return FilterMasks(self.metadata_columns, self.document_index, by_row=self.filters_by_row)

    @cached_property
    def fingerprint(self) -> str:
        """The set's fingerprint under its scheme (``documents/fingerprint.py``: one JSON line per chunk, hashed
        in order for format-1 folders, summed as digests otherwise)."""
        return fingerprint_of(self._lines(self._fingerprint_rows()), self.fingerprint_scheme)

    def fingerprint_under(self, scheme: int) -> str:
        """The fingerprint under ``scheme`` (another scheme's is computed: a whole pass over the chunks)."""
        return self.fingerprint if scheme == self.fingerprint_scheme else fingerprint_of(
            self._lines(self._fingerprint_rows()), scheme)

    def with_fingerprint_scheme(self, scheme: int) -> ChunkSet:
        """This chunk set fingerprinted under ``scheme`` (the same chunks, not copied)."""
        if scheme == self.fingerprint_scheme:
            return self
        other = copy.copy(self)
        other.__dict__.pop("fingerprint", None)
        other.fingerprint_scheme = _checked_scheme(scheme)
        return other

    def _lines(self, rows: Iterable[StoredRow]) -> Iterator[bytes]:
        return chunk_lines(rows, self._metadata_of, self.chunk_fields)

    def _fingerprint_rows(self) -> Iterable[StoredRow]:
        if isinstance(self.chunks, StoredChunks):
            return self.chunks.rows
        return (_row(c) for c in self.chunks)

    def _rows_at(self, rows: np.ndarray) -> Iterable[StoredRow]:
        if isinstance(self.chunks, StoredChunks):
            stored = self.chunks.rows
            return (stored[r] for r in rows.tolist())
        return (_row(self.chunks[r]) for r in rows.tolist())

    def _changed_fingerprint(self, kept_rows: np.ndarray, added: Sequence[Chunk]) -> str | None:
        """The additive fingerprint of :meth:`changed`'s result from this one's: the digests of the chunks that
        left and joined (O(change)). None when this set's fingerprint is sequential: the new set is hashed whole,
        once (a format-1 folder's first update)."""
        if self.fingerprint_scheme != ADDITIVE:
            return None
        gone = np.setdiff1d(np.arange(len(self.chunks), dtype=np.int64), kept_rows, assume_unique=True)
        metadata = {c.document_id: c.metadata for c in reversed(added)}
        joined = chunk_lines(map(_row, added), metadata.__getitem__, {c.id: c.fields for c in added if c.fields})
        return shifted(self.fingerprint, self._lines(self._rows_at(gone)), joined)

    def _metadata_of(self, document_id: str) -> Metadata:
        return self.document_metadata[self._document_number[document_id]]


def _row(chunk: Chunk) -> StoredRow:
    return chunk.id, chunk.document_id, chunk.position, chunk.text, chunk.start, chunk.end


def _checked_scheme(scheme: int) -> int:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown fingerprint scheme {scheme!r} (one of {SCHEMES})")
    return scheme


def _shown(ids: list[Any]) -> str:
    return ", ".join(map(str, ids[:10])) + (" ..." if len(ids) > 10 else "")
