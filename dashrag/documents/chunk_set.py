"""``ChunkSet``: a corpus's chunks, indexed every way a retriever needs them.

Leaves score "rows" (0..n-1, the order of the chunk ids); this class maps rows to
chunk ids and back, finds a chunk by ``(document_id, position)`` for window
expansion, and fingerprints the whole set so a saved retriever can tell it is
being loaded against the corpus it was built on.

A set read from a store keeps its chunks as columns and reads a chunk's text from the
store when the chunk is shown, in one batch per answer (:class:`StoredChunks`,
docs/scale.md "Texts left in the store").
"""

from __future__ import annotations

import copy
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Protocol, Sequence, overload

import numpy as np

from dashrag.documents.fingerprint import ADDITIVE, SCHEMES, chunk_lines, shifted
from dashrag.documents.fingerprint import fingerprint as fingerprint_of
from dashrag.documents.model import Chunk, Metadata, normalise_categories
from dashrag.errors import CorpusError, PersistenceError, UnknownChunkError

if TYPE_CHECKING:  # the filter language is imported by the first filter
    from dashrag.filters.columns import MetadataColumns
    from dashrag.filters.masks import FilterMasks


#: up to this many document ids, an update finds their numbers by scanning the id list (:meth:`ChunkSet._numbers_of`)
_SCANNED_IDS = 32
StoredRow = tuple[int, str, int, str, int, int]  # a store's chunk row: id, document id, position, text, start, end


class ChunkTexts(Protocol):
    """Where the texts of a store's chunks are read when they are shown (docs/scale.md, "Texts left in the store").

    Why: a load that read every chunk's text made one Python string per chunk, most of a worker's private memory
    and of a load's time, for a query that shows ten. A loaded chunk set keeps what scoring and filtering need
    (ids, documents, positions, offsets, metadata) and asks its store for the texts of the chunks it shows.
    """

    def texts_of(self, ids: Sequence[int]) -> Mapping[int, str]:
        """The texts of the chunks ``ids`` (ids the store lacks are left out), read in one batch."""
        ...

    def all_texts(self) -> Iterator[tuple[int, str]]:
        """``(id, text)`` of every chunk of the store, ascending ids (a refit, a fingerprint's whole pass)."""
        ...


class HeldTexts:
    """:class:`ChunkTexts` held in memory (chunks made in this process: an update's new ones, a test's rows)."""

    def __init__(self, texts: Mapping[int, str]):
        self._texts = dict(texts)

    def texts_of(self, ids: Sequence[int]) -> Mapping[int, str]:
        return {i: self._texts[i] for i in ids if i in self._texts}

    def all_texts(self) -> Iterator[tuple[int, str]]:
        return iter(sorted(self._texts.items()))


class StoredChunks(Sequence[Chunk]):
    """A store's chunks as columns, read as :class:`Chunk` objects with their texts from ``texts``.

    Why columns: one Python row per chunk (with its text) was most of a load and of each service worker's
    private memory at 100,000 documents (docs/scale.md); a query shows ten chunks. A Chunk is made when it is
    read; :meth:`at_rows` reads the texts of many in one batch, which every reader that shows several uses.
    ``held``: texts known here (an update's new chunks, whose store is not written yet), by chunk id.
    """

    def __init__(self, ids: np.ndarray, document_ids: Sequence[str], document_index: np.ndarray,
                 positions: np.ndarray, starts: np.ndarray, ends: np.ndarray, document_metadata: Sequence[Metadata],
                 fields: Mapping[int, Metadata], texts: ChunkTexts, held: Mapping[int, str] | None = None):
        self.ids = ids
        self.document_ids = document_ids
        self.document_index = document_index
        self.positions = positions
        self.starts = starts
        self.ends = ends
        self._document_metadata = document_metadata
        self._fields = fields
        self.texts = texts
        self.held: Mapping[int, str] = held or {}

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, row: int) -> Chunk: ...

    @overload
    def __getitem__(self, row: slice) -> list[Chunk]: ...

    def __getitem__(self, row: int | slice) -> Chunk | list[Chunk]:
        if isinstance(row, slice):
            return self.at_rows(range(*row.indices(len(self))))
        if not -len(self) <= row < len(self):
            raise IndexError(f"chunk row {row} out of range")
        return self.at_rows([row % len(self)])[0]

    def __iter__(self) -> Iterator[Chunk]:
        for row, text in enumerate(self.all_texts()):
            yield self._chunk(row, text)

    def at_rows(self, rows: Iterable[int]) -> list[Chunk]:
        """The chunks of ``rows``, their texts read in one batch."""
        rows = list(rows)
        return [self._chunk(r, t) for r, t in zip(rows, self.texts_at(rows))]

    def texts_at(self, rows: Sequence[int]) -> list[str]:
        """The texts of ``rows``, in order: those held here, the others in one read of the store."""
        ids = self.ids[np.asarray(rows, dtype=np.int64)].tolist() if len(rows) else []
        missing = [i for i in ids if i not in self.held]
        read = self.texts.texts_of(missing) if missing else {}
        lacking = [i for i in missing if i not in read]
        if lacking:
            raise PersistenceError(f"the store lacks the text of chunk(s) {_shown(lacking)}")
        return [self.held[i] if i in self.held else read[i] for i in ids]

    def all_texts(self) -> Iterator[str]:
        """Every chunk's text in row order, streamed from the store (which may hold chunks this set left out:
        the old store of an update, read before the new one is written)."""
        stored = self.texts.all_texts()
        for i in self.ids.tolist():
            if i in self.held:
                yield self.held[i]
                continue
            for found, text in stored:
                if found == i:
                    yield text
                    break
                if found > i:
                    raise PersistenceError(f"the store lacks the text of chunk {i}")
            else:
                raise PersistenceError(f"the store lacks the text of chunk {i}")

    def rows_of_texts(self, rows: Sequence[int], texts: Iterable[str]) -> Iterator[StoredRow]:
        """The store rows of ``rows`` given their texts (what a fingerprint hashes, without making chunks)."""
        for r, text in zip(rows, texts):
            yield (int(self.ids[r]), self.document_ids[self.document_index[r]], int(self.positions[r]), text,
                   int(self.starts[r]), int(self.ends[r]))

    def _chunk(self, row: int, text: str) -> Chunk:
        i = int(self.ids[row])
        number = int(self.document_index[row])
        return Chunk(id=i, document_id=self.document_ids[number], position=int(self.positions[row]), text=text,
                     start=int(self.starts[row]), end=int(self.ends[row]),
                     metadata=self._document_metadata[number], fields=self._fields.get(i, {}))


class SparseMetadata(Sequence[Metadata]):
    """The documents' metadata by document number, held for the documents that have any.

    Why: a corpus's documents mostly have none, and a load that made one empty dict per document spent a
    fifth of a second per million documents on them (docs/scale.md, "Chunk columns in the snapshot"). A
    document without metadata gets its empty dict when it is first read, kept, so its chunks share one dict
    as they share a listed one.
    """

    def __init__(self, count: int, given: Mapping[int, Metadata]):
        self._count = count
        self._given: dict[int, Metadata] = {n: m for n, m in given.items() if m}

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, number: int) -> Metadata: ...

    @overload
    def __getitem__(self, number: slice) -> list[Metadata]: ...

    def __getitem__(self, number: int | slice) -> Metadata | list[Metadata]:
        if isinstance(number, slice):
            return [self[n] for n in range(*number.indices(self._count))]
        if not -self._count <= number < self._count:
            raise IndexError(f"document number {number} out of range")
        number %= self._count
        found = self._given.get(number)
        return self._given.setdefault(number, {}) if found is None else found

    def __iter__(self) -> Iterator[Metadata]:
        return (self[n] for n in range(self._count))

    def listed(self) -> dict[int, Metadata]:
        """The documents that have metadata, by number (what a save writes)."""
        return {n: m for n, m in self._given.items() if m}

    def kept(self, renumbered: np.ndarray, count: int, joined: Mapping[int, Metadata]) -> SparseMetadata:
        """This metadata after an update: document ``n`` becomes ``renumbered[n]`` (-1: gone) of ``count``, and the
        documents ``joined`` (by their new numbers) are added."""
        kept = {int(renumbered[n]): m for n, m in self._given.items() if m and renumbered[n] >= 0}
        return SparseMetadata(count, {**kept, **joined})


class ChunkSet:
    def __init__(self, chunks: Iterable[Chunk], fingerprint: str | None = None, scheme: int = ADDITIVE):
        """``fingerprint``: the set's fingerprint where it is already known (a load that found the store
        file unchanged since the save that computed it), so it is not re-hashed; ``scheme``: how it is
        computed (``documents/fingerprint.py``; a folder of format 1 was fingerprinted sequentially)."""
        ordered = sorted(chunks, key=lambda c: c.id)
        document_ids, document_index = _numbered([c.document_id for c in ordered])
        first_metadata = {c.document_id: c.metadata for c in reversed(ordered)}
        self._take(ordered, np.fromiter((c.id for c in ordered), dtype=np.int64, count=len(ordered)), document_ids,
                   document_index, [first_metadata[d] for d in document_ids], fingerprint,
                   {c.id: c.fields for c in ordered if c.fields}, scheme)

    @classmethod
    def from_rows(cls, rows: Sequence[StoredRow], metadata: Mapping[str, Metadata],
                  fingerprint: str | None = None, fields: Mapping[int, Metadata] | None = None,
                  scheme: int = ADDITIVE) -> ChunkSet:
        """A store's rows with their texts (ascending ids), its documents' metadata and the chunks' own fields (by
        chunk id, only the chunks that have any); the texts are held (:class:`HeldTexts`)."""
        return cls.from_columns([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                                [r[4] for r in rows], [r[5] for r in rows], metadata,
                                HeldTexts({r[0]: r[3] for r in rows}), fingerprint, fields, scheme)

    @classmethod
    def from_columns(cls, ids: Sequence[int], document_of_row: Sequence[str], positions: Sequence[int],
                     starts: Sequence[int], ends: Sequence[int], metadata: Mapping[str, Metadata], texts: ChunkTexts,
                     fingerprint: str | None = None, fields: Mapping[int, Metadata] | None = None,
                     scheme: int = ADDITIVE) -> ChunkSet:
        """A store's chunks as columns (ascending ids) without their texts, which ``texts`` gives when a chunk is
        shown (:class:`StoredChunks`); its documents' metadata and the chunks' own fields as in :meth:`from_rows`."""
        document_ids, document_index = _numbered(document_of_row)
        document_metadata = [metadata.get(d, {}) for d in document_ids]
        return cls.from_arrays(_int64(ids), document_ids, document_index, _int64(positions), _int64(starts),
                               _int64(ends), document_metadata, fields or {}, texts, fingerprint, scheme)

    @classmethod
    def from_arrays(cls, ids: np.ndarray, document_ids: list[str], document_index: np.ndarray, positions: np.ndarray,
                    starts: np.ndarray, ends: np.ndarray, document_metadata: Sequence[Metadata],
                    fields: Mapping[int, Metadata], texts: ChunkTexts, fingerprint: str | None = None,
                    scheme: int = ADDITIVE) -> ChunkSet:
        """A store's chunks as the arrays a set keeps (:meth:`column_arrays`: ascending ids, each row's document
        number among ``document_ids``, in order of first appearance), without their texts, which ``texts``
        gives when a chunk is shown; what a load maps from a snapshot (core/chunk_columns.py)."""
        chunks = StoredChunks(ids, document_ids, document_index, positions, starts, ends, document_metadata, fields,
                              texts)
        chunk_set = cls.__new__(cls)
        chunk_set._take(chunks, ids, document_ids, document_index, document_metadata, fingerprint, fields, scheme)
        return chunk_set

    def column_arrays(self) -> np.ndarray:
        """The set's integer columns as one int64 array of 5 rows: chunk ids, document numbers, positions, starts,
        ends (what :meth:`from_arrays` takes back; a save writes it beside the nodes' state)."""
        if isinstance(self.chunks, StoredChunks):
            starts, ends = self.chunks.starts, self.chunks.ends
        else:
            starts, ends = _int64([c.start for c in self.chunks]), _int64([c.end for c in self.chunks])
        return np.stack([self.ids, self.document_index, self.positions, starts, ends]).astype(np.int64, copy=False)

    def rows_without(self, document_ids: Iterable[str]) -> np.ndarray:
        """The rows (ascending) of every chunk but those of ``document_ids`` (ids not here are ignored)."""
        document_ids = list(document_ids)
        if not document_ids:  # an update that only adds: every row, without the id -> number map
            return np.arange(len(self.ids), dtype=np.int64)
        return np.flatnonzero(~np.isin(self.document_index, self._numbers_of(document_ids))).astype(np.int64)

    def _numbers_of(self, document_ids: list[str]) -> list[int]:
        """The numbers of those of ``document_ids`` that are here. A few ids (an update's usual removal) are found
        by scanning the id list, in C (~3 ms an id at a million documents), unless the id -> number map is made
        already; more, through that map, made once (~0.3 s at a million documents: most of a removal of 10)."""
        if len(document_ids) <= _SCANNED_IDS and "_document_number" not in self.__dict__:
            return [n for n in map(self._scanned_number, document_ids) if n is not None]
        return [n for n in map(self._document_number.get, document_ids) if n is not None]

    def _scanned_number(self, document_id: str) -> int | None:
        try:
            return self.document_ids.index(document_id)
        except ValueError:
            return None

    def changed(self, kept_rows: np.ndarray, added: Sequence[Chunk]) -> ChunkSet:
        """The chunk set of an update: the rows ``kept_rows`` (ascending, every row of the documents they keep:
        :meth:`rows_without`) then ``added`` (ids above every one here). A set read from a store stays columns
        whose texts the old store gives (the kept chunks keep their ids; the added ones' texts are held). Its
        fingerprint is additive, shifted from this one's by the chunks that changed where this one's is additive
        too."""
        gone_rows = rows_outside(kept_rows, len(self.ids))
        fingerprint_ = self._changed_fingerprint(gone_rows, added)
        stored = self.chunks
        if not isinstance(stored, StoredChunks):
            return ChunkSet([self.chunks[r] for r in kept_rows.tolist()] + list(added), fingerprint_)
        kept_numbers = _present(self.document_index[kept_rows], len(self.document_ids)).tolist()  # their order
        renumbered = np.full(len(self.document_ids), -1, dtype=np.int64)
        renumbered[kept_numbers] = np.arange(len(kept_numbers))
        document_ids = [self.document_ids[n] for n in kept_numbers]
        joined: dict[str, int] = {}
        joined_metadata: dict[int, Metadata] = {}
        for c in added:
            if c.document_id not in joined:
                joined[c.document_id] = number = len(document_ids)
                document_ids.append(c.document_id)
                joined_metadata[number] = c.metadata
        metadata: Sequence[Metadata]
        if isinstance(self.document_metadata, SparseMetadata):  # kept sparse: no dict made per document
            metadata = self.document_metadata.kept(renumbered, len(document_ids), joined_metadata)
        else:
            metadata = [self.document_metadata[n] for n in kept_numbers] + list(joined_metadata.values())
        document_index = np.concatenate([renumbered[self.document_index[kept_rows]],
                                         _int64([joined[c.document_id] for c in added])])
        ids = np.concatenate([self.ids[kept_rows], _int64([c.id for c in added])])
        fields = dict(self.chunk_fields)
        gone = self.ids[gone_rows].tolist()
        for i in gone if fields else []:
            fields.pop(i, None)
        fields.update({c.id: c.fields for c in added if c.fields})
        left = set(gone)
        held = {i: t for i, t in stored.held.items() if i not in left}
        held.update({c.id: c.text for c in added})
        chunks = StoredChunks(ids, document_ids, document_index,
                              np.concatenate([stored.positions[kept_rows], _int64([c.position for c in added])]),
                              np.concatenate([stored.starts[kept_rows], _int64([c.start for c in added])]),
                              np.concatenate([stored.ends[kept_rows], _int64([c.end for c in added])]),
                              metadata, fields, stored.texts, held)
        chunk_set = ChunkSet.__new__(ChunkSet)
        chunk_set._take(chunks, ids, document_ids, document_index, metadata, fingerprint_, fields, ADDITIVE)
        return chunk_set

    def _take(self, chunks: Sequence[Chunk], ids: np.ndarray, document_ids: list[str], document_index: np.ndarray,
              document_metadata: Sequence[Metadata], fingerprint: str | None, chunk_fields: Mapping[int, Metadata],
              scheme: int) -> None:
        """Hold the chunks and their arrays: ``ids`` ascending, ``document_ids`` in order of first appearance and
        ``document_index`` each row's number among them (what an update derives from the old set's arrays)."""
        self.fingerprint_scheme = _checked_scheme(scheme)
        if fingerprint is not None:
            self.__dict__["fingerprint"] = fingerprint  # the cached_property's own slot
        if not len(chunks):
            raise CorpusError("the corpus has no chunks (no document had any text)")
        self.chunks: Sequence[Chunk] = chunks
        self.ids = ids
        if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):  # in id order: unique iff increasing
            raise CorpusError("chunk ids are not unique")
        self.document_ids: list[str] = document_ids
        self.document_index = document_index
        self.document_sizes = np.bincount(document_index, minlength=len(document_ids))
        self.document_metadata: Sequence[Metadata] = document_metadata
        self.chunk_fields: Mapping[int, Metadata] = chunk_fields  # by chunk id; only chunks with fields

    @cached_property
    def _document_number(self) -> dict[str, int]:
        """Each document's number by its id: made when first asked (an update, a window, a document's size), not
        by a load (a million ids hashed into a dict cost about half a second)."""
        return dict(zip(self.document_ids, range(len(self.document_ids))))

    @cached_property
    def document_categories(self) -> list[dict[str, tuple[str, ...]]]:
        return [normalise_categories(m) for m in self.document_metadata]

    @cached_property
    def positions(self) -> np.ndarray:
        """Each row's position in its document."""
        if isinstance(self.chunks, StoredChunks):
            return self.chunks.positions
        return _int64([c.position for c in self.chunks])

    @cached_property
    def _rows_by_position(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows ordered by document number then position, and where each document's rows begin there."""
        order = np.lexsort((self.positions, self.document_index))
        return order, np.concatenate([[0], np.cumsum(self.document_sizes)[:-1]]).astype(np.int64)

    def __len__(self) -> int:
        return len(self.chunks)

    @property
    def texts(self) -> list[str]:
        """Every chunk's text, in row order (a refit's input: read from the store in one pass)."""
        if isinstance(self.chunks, StoredChunks):
            return list(self.chunks.all_texts())
        return [c.text for c in self.chunks]

    def chunks_at(self, rows: Iterable[int]) -> list[Chunk]:
        """The chunks of ``rows``, in order; a stored set reads their texts in one batch (never one per chunk)."""
        if isinstance(self.chunks, StoredChunks):
            return self.chunks.at_rows(rows)
        return [self.chunks[r] for r in rows]

    def texts_at(self, rows: Iterable[int]) -> list[str]:
        """The texts of ``rows``, in order, read as :meth:`chunks_at` reads them."""
        if isinstance(self.chunks, StoredChunks):
            return self.chunks.texts_at(list(rows))
        return [self.chunks[r].text for r in rows]

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
        return self.chunks_at(self.rows_of([chunk_id]).tolist())[0]

    def row_at(self, document_id: str, position: int) -> int | None:
        """The row of the chunk at ``position`` of ``document_id``; None when there is none."""
        number = self._document_number.get(document_id)
        if number is None:
            return None
        order, first = self._rows_by_position
        rows = order[first[number]:first[number] + self.document_sizes[number]]
        found = int(np.searchsorted(self.positions[rows], position))
        if found < len(rows) and self.positions[rows[found]] == position:
            return int(rows[found])
        return None

    def at(self, document_id: str, position: int) -> Chunk | None:
        return self.at_positions([(document_id, position)])[0]

    def at_positions(self, addresses: Sequence[tuple[str, int]]) -> list[Chunk | None]:
        """The chunks at ``(document id, position)`` addresses (None where there is none), read in one batch."""
        rows = [self.row_at(d, p) for d, p in addresses]
        made = iter(self.chunks_at([r for r in rows if r is not None]))
        return [None if r is None else next(made) for r in rows]

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
            return self.chunks.rows_of_texts(range(len(self.chunks)), self.chunks.all_texts())
        return (_row(c) for c in self.chunks)

    def _rows_at(self, rows: np.ndarray) -> Iterable[StoredRow]:
        """The rows ``rows`` with their texts (the store's read once for all of them)."""
        if isinstance(self.chunks, StoredChunks):
            wanted = rows.tolist()
            return self.chunks.rows_of_texts(wanted, self.chunks.texts_at(wanted))
        return (_row(self.chunks[r]) for r in rows.tolist())

    def _changed_fingerprint(self, gone: np.ndarray, added: Sequence[Chunk]) -> str | None:
        """The additive fingerprint of :meth:`changed`'s result from this one's: the digests of the chunks that
        left (the rows ``gone``) and joined (O(change)). None when this set's fingerprint is sequential: the new set
        is hashed whole, once (a format-1 folder's first update)."""
        if self.fingerprint_scheme != ADDITIVE:
            return None
        metadata = {c.document_id: c.metadata for c in reversed(added)}
        joined = chunk_lines(map(_row, added), metadata.__getitem__, {c.id: c.fields for c in added if c.fields})
        # the gone rows' documents by the numbers their rows hold, not by id: the id -> number map hashes every
        # document id (~0.3 s at a million documents, most of a removal of 10 there)
        left = {self.document_ids[n]: self.document_metadata[n] for n in set(self.document_index[gone].tolist())}
        return shifted(self.fingerprint, chunk_lines(self._rows_at(gone), left.__getitem__, self.chunk_fields),
                       joined)

    def _metadata_of(self, document_id: str) -> Metadata:
        return self.document_metadata[self._document_number[document_id]]


def _row(chunk: Chunk) -> StoredRow:
    return chunk.id, chunk.document_id, chunk.position, chunk.text, chunk.start, chunk.end


def _numbered(document_of_row: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The documents in order of first appearance and each row's number among them."""
    numbers: dict[str, int] = {}
    for d in document_of_row:
        numbers.setdefault(d, len(numbers))
    return list(numbers), np.fromiter(map(numbers.__getitem__, document_of_row), dtype=np.int64,
                                      count=len(document_of_row))


def _present(numbers: np.ndarray, count: int) -> np.ndarray:
    """The numbers of ``range(count)`` that ``numbers`` holds, ascending: a mask, O(len(numbers) + count) (a
    hash-based ``np.unique`` of a million rows took ~0.3 s of an update)."""
    seen = np.zeros(count, dtype=bool)
    seen[numbers] = True
    return np.flatnonzero(seen)


def rows_outside(rows: np.ndarray, count: int) -> np.ndarray:
    """The numbers of ``range(count)`` not among ``rows``, ascending: a mask, O(count) (``np.setdiff1d`` sorts). An
    update's gone rows (those it does not keep), a counts' live rows (those not tombstoned)."""
    left = np.ones(count, dtype=bool)
    left[rows] = False
    return np.flatnonzero(left)


def _int64(values: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(-1)


def _checked_scheme(scheme: int) -> int:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown fingerprint scheme {scheme!r} (one of {SCHEMES})")
    return scheme


def _shown(ids: list[Any]) -> str:
    return ", ".join(map(str, ids[:10])) + (" ..." if len(ids) > 10 else "")
