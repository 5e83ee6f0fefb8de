"""The masks of the filters asked of one chunk set, computed once each and kept (least recently used first out).

A query names its filter as JSON, so every call parses it into a new ``Filter`` value; equal
filters are equal values (frozen dataclasses), so the mask computed for the first call serves
every later one while the chunk set lives. A chunk set never changes (a changed corpus is a new
chunk set: ``core/updating.py``), so a kept mask is never stale. This is what makes a filtered
in-process query cost no more than the unfiltered one: after the first call the filter costs
its parse and one dictionary look-up, and the top-k selection runs over fewer rows.

What is kept is bounded twice: at most ``capacity`` filters, and at most ``max_nodes`` filter
nodes among them (:func:`~dashrag.filters.ast.node_count`). Why the nodes: a kept filter is
its syntax tree, about two objects the garbage collector tracks per node, and a service asked
distinct large filters (999 terms each) kept 256 of them, some 300,000 objects that every full
collection walked again while holding the GIL, which stalled ``/health`` (docs/security.md,
"The event loop under load"). 16,384 nodes are some 33,000 objects, which a full collection
walks in about 20 ms of CPU (the service's 254,000 objects at start-up took 139 ms); the small
filters people repeat are a handful of nodes each, and sixteen filters of 999 terms still fit.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from dashrag.filters.ast import Filter, node_count
from dashrag.filters.columns import MetadataColumns
from dashrag.filters.evaluate import document_mask

CAPACITY = 256  # distinct filters kept per chunk set: a mask is one byte per row, so at most 256 bytes a row
MAX_NODES = 16_384  # filter nodes kept per chunk set, all filters together (see above)


class FilterMasks:
    """``documents(f)``: the boolean mask over the documents; ``rows(f)``: over the chunk rows. Both read-only.

    ``by_row``: the columns hold one row per chunk (chunks with their own fields, ``ChunkSet.filters_by_row``);
    then a document is in ``documents(f)`` when any of its chunks matches, and ``rows(f)`` is exact per chunk.
    """

    def __init__(self, columns: MetadataColumns, document_index: np.ndarray, capacity: int = CAPACITY,
                 max_nodes: int = MAX_NODES, by_row: bool = False):
        self._columns = columns
        self._document_index = document_index
        self._by_row = by_row
        self._capacity = capacity
        self._max_nodes = max_nodes
        self._kept: OrderedDict[Filter, tuple[np.ndarray, np.ndarray, int]] = OrderedDict()
        self._nodes = 0  # of the filters kept
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
                return found[0], found[1]
        matched = document_mask(node, self._columns)  # raises a FilterError for a filter that misfits the corpus
        if self._by_row:
            rows = matched
            documents = np.zeros(int(self._document_index.max()) + 1, dtype=bool)
            documents[self._document_index[rows]] = True
        else:
            documents, rows = matched, matched[self._document_index]
        documents.flags.writeable = rows.flags.writeable = False
        nodes = node_count(node)
        with self._lock:
            if node not in self._kept:
                self._kept[node] = (documents, rows, nodes)
                self._nodes += nodes
            while self._kept and (len(self._kept) > self._capacity or self._nodes > self._max_nodes):
                self._nodes -= self._kept.popitem(last=False)[1][2]
        return documents, rows
