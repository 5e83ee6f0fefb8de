"""A filter as a mask over a corpus's documents, computed from its metadata columns (``columns.py``).

This is also where a filter meets the corpus's types: comparing a value with a field that
holds only values of other kinds (``{"year": "2015"}`` where years are numbers) is a
FilterError naming the path, not a silent miss. A field no document has matches nothing.
"""

from __future__ import annotations

import numpy as np

from dashrag.errors import FilterError
from dashrag.filters.ast import And, Compare, Exists, Filter, In, Not, Or
from dashrag.filters.columns import Column, MetadataColumns
from dashrag.filters.values import Value, describe


def document_mask(node: Filter, columns: MetadataColumns) -> np.ndarray:
    """Boolean mask over the documents: which ones the filter matches."""
    if isinstance(node, Compare):
        return _scatter(columns, _matching(node, node.field, node.value, columns, node.path))
    if isinstance(node, In):
        return _scatter(columns, _members(node, columns))
    if isinstance(node, Exists):
        found = columns.fields.get(node.field)
        return found.present.copy() if found is not None else np.zeros(columns.size, dtype=bool)
    if isinstance(node, Not):
        return ~document_mask(node.part, columns)
    if isinstance(node, And):
        mask = np.ones(columns.size, dtype=bool)
        for part in node.parts:
            mask &= document_mask(part, columns)
        return mask
    if isinstance(node, Or):
        mask = np.zeros(columns.size, dtype=bool)
        for part in node.parts:
            mask |= document_mask(part, columns)
        return mask
    raise TypeError(f"not a filter node: {node!r}")


def check_types(node: Filter, columns: MetadataColumns) -> None:
    """Raise the FilterError ``document_mask`` would raise, without computing a mask."""
    if isinstance(node, Compare):
        _column_for(node.field, node.value, columns, node.path)
    elif isinstance(node, In):
        for value in node.values:
            _column_for(node.field, value, columns, node.path)
    elif isinstance(node, Not):
        check_types(node.part, columns)
    elif isinstance(node, (And, Or)):
        for part in node.parts:
            check_types(part, columns)


_NOTHING = np.empty(0, dtype=np.int64)


def _scatter(columns: MetadataColumns, documents: np.ndarray) -> np.ndarray:
    mask = np.zeros(columns.size, dtype=bool)
    mask[documents] = True
    return mask


def _column_for(field: str, value: Value, columns: MetadataColumns, path: str) -> Column | None:
    column = columns.column(field, value.kind)
    if column is None:
        kinds = columns.kinds(field)
        if kinds:
            held = " and ".join(describe(k) for k in kinds)
            raise FilterError(path, f"compares {describe(value.kind)} ({value.raw!r}) with {field!r}, which holds "
                                    f"{held} in this corpus")
    return column


def _members(node: In, columns: MetadataColumns) -> np.ndarray:
    """The documents (with repeats) holding one of ``node.values``: one sorted search of all the values at once
    (``$in`` of 10,000 values is one ``searchsorted`` and one pass over the column, not 10,000 of each)."""
    if not node.values:
        return _NOTHING
    column = _column_for(node.field, node.values[0], columns, node.path)  # one kind: parse checked
    if column is None:
        return _NOTHING
    wanted = np.asarray([v.key for v in node.values], dtype=column.keys.dtype)
    starts = np.searchsorted(column.keys, wanted, "left")
    ends = np.searchsorted(column.keys, wanted, "right")
    depth = np.zeros(len(column.keys) + 1, dtype=np.int64)  # +1 where a run of equal keys starts, -1 after it
    np.add.at(depth, starts, 1)
    np.add.at(depth, ends, -1)
    return column.documents[np.cumsum(depth[:-1]) > 0]


def _matching(node: Compare, field: str, value: Value, columns: MetadataColumns, path: str) -> np.ndarray:
    """The documents (with repeats) holding a value of ``field`` that satisfies the comparison."""
    column = _column_for(field, value, columns, path)
    if column is None:
        return _NOTHING
    keys, key = column.keys, value.key
    op = node.op
    left, right = int(np.searchsorted(keys, key, "left")), int(np.searchsorted(keys, key, "right"))
    lo, hi = {"$eq": (left, right), "$gt": (right, len(keys)), "$gte": (left, len(keys)), "$lt": (0, left),
              "$lte": (0, right)}[op]
    return column.documents[lo:hi]
