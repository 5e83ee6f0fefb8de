"""The masks of the filters asked of one chunk set, computed once each and kept (least recently used first out).

A query names its filter as JSON, so every call parses it into a new ``Filter`` value; equal
filters are equal values (frozen dataclasses), so the mask computed for the first call serves
every later one while the chunk set lives. A chunk set never changes (a changed corpus is a new
chunk set: ``core/updating.py``), so a kept mask is never stale. This is what makes a filtered
in-process query cost no more than the unfiltered one: after the first call the filter costs
its parse and one dictionary look-up, and the top-k selection runs over fewer rows.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from dashrag.filters.ast import Filter
from dashrag.filters.columns import MetadataColumns
from dashrag.filters.evaluate import document_mask

CAPACITY = 256  # distinct filters kept per chunk set: a mask is one byte per row, so at most 256 bytes a row


class FilterMasks:
    """``documents(f)``: the boolean mask over the documents; ``rows(f)``: over the chunk rows. Both read-only.

    ``by_row``: the columns hold one row per chunk (chunks with their own fields, ``ChunkSet.filters_by_row``);
    then a document is in ``documents(f)`` when any of its chunks matches, and ``rows(f)`` is exact per chunk.
    """

    def __init__(self, columns: MetadataColumns, document_index: np.ndarray, capacity: int = CAPACITY,
                 by_row: bool = False):
        self._columns = columns
        self._document_index = document_index
        self._by_row = by_row
        self._capacity = capacity
        self._kept: OrderedDict[Filter, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()  # the children of a parallel node ask from several threads

    def documents(self, node: Filter) -> np.ndarray:
        return self._masks(node)[0]

    def rows(self, node: Filter) -> np.ndarray:
        return self._masks(node)[1]

    def _masks(self, node: Filter) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            found = self._kept.get(node)
            if found is not None:
                self._kept.move_to_end(node)
                return found
        matched = document_mask(node, self._columns)  # raises a FilterError for a filter that misfits the corpus
        if self._by_row:
            rows = matched
            documents = np.zeros(int(self._document_index.max()) + 1, dtype=bool)
            documents[self._document_index[rows]] = True
        else:
            documents, rows = matched, matched[self._document_index]
        documents.flags.writeable = rows.flags.writeable = False
        with self._lock:
            self._kept[node] = (documents, rows)
            while len(self._kept) > self._capacity:
                self._kept.popitem(last=False)
        return documents, rows
