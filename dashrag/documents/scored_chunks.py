"""``ScoredChunks``: a leaf's ranked answer kept as columns, read as ScoredChunk objects.

A leaf ranks by array operations and ends with two columns per query: the rows of
the chosen chunks and their scores. Turning every hit of a batch into a
:class:`ScoredChunk` up front cost more than scoring it (bench/bench_bm25_end_to_end.py)
and most of a batch's memory, while many callers read a few results of each query, or
only ids and scores (evaluation, a TREC run, a fusion). So the answer stays columnar and
a ScoredChunk is made when it is read (once; it is then kept). To a caller it is a
read-only sequence of ScoredChunk, equal to the list it stands for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence, overload

import numpy as np

from dashrag.documents.model import ScoredChunk

if TYPE_CHECKING:
    from dashrag.documents.chunk_set import ChunkSet


class ScoredChunks(Sequence[ScoredChunk]):
    """Chunks ``rows`` of ``chunk_set`` (best first) with their ``scores``, scored by ``source``
    (two 1-d arrays of one length: a query's answer costs two small arrays until it is read)."""

    __slots__ = ("_chunk_set", "_rows", "_scores", "_source", "_built")

    def __init__(self, chunk_set: ChunkSet, rows: np.ndarray, scores: np.ndarray, source: str):
        self._chunk_set = chunk_set
        self._rows = rows
        self._scores = scores
        self._source = source
        self._built: list[ScoredChunk] | None = None

    def _list(self) -> list[ScoredChunk]:
        if self._built is None:
            chunks = self._chunk_set.chunks_at(self._rows.tolist())  # their texts in one read of the store
            self._built = [ScoredChunk(c, s, self._source) for c, s in zip(chunks, self._scores.tolist())]
        return self._built

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> ScoredChunk: ...

    @overload
    def __getitem__(self, index: slice) -> list[ScoredChunk]: ...

    def __getitem__(self, index: int | slice) -> ScoredChunk | list[ScoredChunk]:
        return self._list()[index]

    def __iter__(self) -> Iterator[ScoredChunk]:
        return iter(self._list())

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (ScoredChunks, list, tuple)):
            return self._list() == list(other)
        return NotImplemented

    def __add__(self, other: Sequence[ScoredChunk]) -> list[ScoredChunk]:
        return self._list() + list(other)

    def __repr__(self) -> str:
        return f"ScoredChunks({self._list()!r})"

    @property
    def chunk_ids(self) -> list[int]:
        """The chunks' ids, best first, without making ScoredChunk objects."""
        return self._chunk_set.ids[self._rows].tolist()

    def trace_json(self, include_text: bool, limit: int | None) -> list[dict[str, Any]]:
        """The trace's ``output`` entries (ScoredChunk.to_json's: a leaf's chunks carry no
        provenance), straight from the columns."""
        chunk_set = self._chunk_set
        rows = (self._rows if limit is None else self._rows[:limit]).tolist()
        texts = chunk_set.texts_at(rows) if include_text else None  # one read of the store for the node
        ids = chunk_set.ids[rows].tolist()
        numbers = chunk_set.document_index[rows].tolist()
        positions = chunk_set.positions[rows].tolist()
        out = []
        for n, (score, i, number, position) in enumerate(zip(self._scores.tolist(), ids, numbers, positions)):
            item = {"chunk_id": i, "document_id": chunk_set.document_ids[number], "position": position,
                    "score": score, "source": self._source}
            if texts is not None:
                item["text"] = texts[n]
            out.append(item)
        return out


def as_trace_output(output: Sequence[ScoredChunk], include_text: bool, limit: int | None) -> list[dict[str, Any]]:
    """A trace node's ``output`` list for any sequence of ScoredChunk (columnar or not)."""
    if isinstance(output, ScoredChunks):
        return output.trace_json(include_text, limit)
    shown = output if limit is None else output[:limit]
    return [c.to_json(include_text=include_text) for c in shown]
