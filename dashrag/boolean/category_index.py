"""The category clause's index: category name → value → the documents that carry it.

A category clause (``YEAR=2019,2020``) is a pure filter: every chunk of the documents
whose category has any of the values. The index is built once from the chunk set's
per-document categories (``ChunkSet.document_categories``), so a clause costs a
dictionary lookup (one value) or a union of a few sets (several), never a pass over
the corpus in Python. Each answer is an ``IndexedDocuments``: the ids together with
their mask over the corpus's document order and their chunk count, which a
retriever's restriction and a lazy filter then read as they are. The index holds
nothing the corpus does not, so it is rebuilt on load, not saved.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from dashrag.boolean.algebra import IndexedDocuments


class CategoryIndex:
    def __init__(self, document_ids: Sequence[str], document_categories: Sequence[Mapping[str, Iterable[str]]],
                 document_sizes: Sequence[int] | np.ndarray | None = None, universe: Any = None):
        """``document_sizes[i]``: chunks of document ``i`` (default 1 each, counting documents);
        ``universe``: the ``Scope.universe`` these documents make up, recorded on every answer."""
        self._universe = universe
        self._ids = np.asarray(list(document_ids), dtype=object)
        self._sizes = (
            np.ones(len(self._ids), dtype=np.int64)
            if document_sizes is None
            else np.asarray(document_sizes, dtype=np.int64)
        )
        grouped: dict[str, dict[str, list[int]]] = {}
        for number, categories in enumerate(document_categories):
            for name, values in categories.items():
                by_value = grouped.setdefault(name, {})
                for value in dict.fromkeys(values):
                    by_value.setdefault(value, []).append(number)
        self._documents = {
            name: {value: self._indexed(np.asarray(numbers, dtype=np.int64)) for value, numbers in by_value.items()}
            for name, by_value in grouped.items()
        }
        self._empty = self._indexed(np.empty(0, dtype=np.int64))

    def _indexed(self, numbers: np.ndarray) -> IndexedDocuments:
        mask = np.zeros(len(self._ids), dtype=bool)
        mask[numbers] = True
        return IndexedDocuments(
            self._ids[numbers].tolist(), mask=mask, chunk_count=int(self._sizes[numbers].sum()), universe=self._universe
        )

    @property
    def names(self) -> frozenset[str]:
        """Every category name some document carries."""
        return frozenset(self._documents)

    def values(self, name: str) -> frozenset[str]:
        return frozenset(self._documents.get(name, {}))

    def documents(self, name: str, values: Iterable[str]) -> IndexedDocuments:
        """The documents whose category ``name`` has any of ``values``."""
        by_value = self._documents.get(name, {})
        sets = [by_value.get(v, self._empty) for v in dict.fromkeys(values)]
        if len(sets) == 1:
            return sets[0]
        mask = np.logical_or.reduce([s.mask for s in sets])
        return IndexedDocuments(
            frozenset().union(*sets), mask=mask, chunk_count=int(self._sizes[mask].sum()), universe=self._universe
        )
