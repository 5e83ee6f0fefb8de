"""A corpus's metadata as a column store: per field and value kind, the sorted values and their documents.

Built once per chunk set (``ChunkSet.metadata_columns``). A comparison is then two binary
searches into one sorted column and a scatter of the documents found into a mask: its
cost grows with the *matching* values, not with the corpus, so a selective filter costs
next to nothing beside the scoring it restricts. A list field contributes every element
(a document matches when any element does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from dashrag.filters.values import Kind, comparable

KEY_TYPES: dict[str, Any] = {"number": np.float64, "date": np.float64, "bool": np.bool_, "string": object}


@dataclass(frozen=True)
class Column:
    """One kind of value of one field: ``keys`` ascending, ``documents[i]`` the document of ``keys[i]``."""

    keys: np.ndarray
    documents: np.ndarray


@dataclass(frozen=True)
class FieldColumns:
    present: np.ndarray  # per document: it has the field with a value other than null or []
    by_kind: Mapping[str, Column]


class MetadataColumns:
    """The fields of ``metadata`` (one mapping per document, in the chunk set's document order)."""

    def __init__(self, metadata: Sequence[Mapping[str, Any]]):
        self.size = len(metadata)
        gathered: dict[str, dict[str, tuple[list[Any], list[int]]]] = {}
        present: dict[str, list[int]] = {}
        for number, fields in enumerate(metadata):
            for name, raw in fields.items():
                items = raw if isinstance(raw, (list, tuple)) else (raw,)
                if any(item is not None for item in items):
                    present.setdefault(name, []).append(number)
                for item in items:
                    value = comparable(item)
                    if value is not None:
                        keys, docs = gathered.setdefault(name, {}).setdefault(value.kind, ([], []))
                        keys.append(value.key)
                        docs.append(number)
        self.fields: dict[str, FieldColumns] = {}
        for name, documents in present.items():
            mask = np.zeros(self.size, dtype=bool)
            mask[documents] = True
            self.fields[name] = FieldColumns(mask, {kind: _column(kind, *pair)
                                                    for kind, pair in gathered.get(name, {}).items()})

    def kinds(self, name: str) -> list[str]:
        """The kinds of value ``name`` holds somewhere in the corpus (none: no document has it)."""
        found = self.fields.get(name)
        return sorted(found.by_kind) if found else []

    def column(self, name: str, kind: Kind) -> Column | None:
        found = self.fields.get(name)
        return None if found is None else found.by_kind.get(kind)


def _column(kind: str, keys: list[Any], documents: list[int]) -> Column:
    values = np.asarray(keys, dtype=KEY_TYPES[kind])
    order = np.argsort(values, kind="stable")
    return Column(values[order], np.asarray(documents, dtype=np.int64)[order])
