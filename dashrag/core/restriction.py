"""Restrictions: which chunks a leaf may return, applied *before* its top-k.

A filter that ran after top-k would return fewer than k results, or none, when the
allowed chunks rank low; applying it as a mask on the score vector means a
restricted query still returns k chunks wherever k allowed chunks exist.

A restriction is allowed documents, a metadata filter (``dashrag/filters``: what
``retrieve(..., filters=...)`` and ``where_categories`` build) and/or an opaque
predicate over a document's categories; all must hold. An engine-backed index (Qdrant,
PostgreSQL) evaluates the documents and the filter *inside* its search; an opaque
predicate is sent as the list of allowed chunk ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import numpy as np

from dashrag.filters import NODE_TYPES, And, Filter, parse_filter
from dashrag.filters.fields import unknown_field_warnings

if TYPE_CHECKING:
    from dashrag.documents.chunk_set import ChunkSet

CategoryPredicate = Callable[[Mapping[str, tuple[str, ...]]], bool]


@dataclass(eq=False)
class Restriction:
    """Allowed documents (by id), a metadata filter, and/or a predicate over a document's categories."""

    documents: frozenset[str] | None = None
    predicate: CategoryPredicate | None = None
    filter: Filter | None = None
    _cache: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def to_documents(cls, document_ids: Iterable[str]) -> Restriction:
        return cls(documents=frozenset(document_ids))

    @classmethod
    def where(cls, filters: Any) -> Restriction:
        """A metadata filter, given as its JSON (a dict or text) or already parsed (docs/filters.md)."""
        return cls(filter=filters if isinstance(filters, NODE_TYPES) else parse_filter(filters))

    @classmethod
    def where_categories(cls, **required: str | Iterable[str]) -> Restriction:
        """``where_categories(COUNTRY=["IQ", "SY"])``: every named category has one of the values; the
        filter ``{"COUNTRY": {"$in": ["IQ", "SY"]}}``."""
        return cls.where({name: {"$in": [values] if isinstance(values, str) else list(values)}
                          for name, values in required.items()})

    def narrowed(self, other: Restriction | None) -> Restriction:
        """Both this restriction and ``other`` (None: this one)."""
        if other is None:
            return self
        documents = self.documents if other.documents is None else (
            other.documents if self.documents is None else self.documents & other.documents)
        predicates = [p for p in (self.predicate, other.predicate) if p is not None]
        predicate = None if not predicates else predicates[0] if len(predicates) == 1 else (
            lambda cats: all(p(cats) for p in predicates))
        filters = [f for f in (self.filter, other.filter) if f is not None]
        combined = None if not filters else filters[0] if len(filters) == 1 else And(tuple(filters))
        return Restriction(documents=documents, predicate=predicate, filter=combined)

    def warnings(self, chunks: ChunkSet) -> list[str]:
        """What a user must hear about the filter on this corpus although it is valid: each field it names that
        no document has (it matches nothing; ``filters/fields.py``). Every face shows them beside the answer."""
        return [] if self.filter is None else unknown_field_warnings(self.filter, chunks.metadata_columns)

    @property
    def only_filter(self) -> Filter | None:
        """The metadata filter when it is all this restriction holds (no documents, no predicate), else None."""
        return self.filter if self.documents is None and self.predicate is None else None

    def document_mask(self, chunks: ChunkSet) -> np.ndarray:
        """Boolean mask over the chunk set's documents (cached per chunk set; a filter's mask is the chunk
        set's own, kept across calls and restrictions: ``filters/masks.py``). Read-only."""
        key = id(chunks)
        if key not in self._cache:
            if self.only_filter is not None:
                return chunks.filter_masks.documents(self.only_filter)
            mask = np.ones(len(chunks.document_ids), dtype=bool)
            if self.documents is not None:
                mask &= np.fromiter((d in self.documents for d in chunks.document_ids), bool, len(mask))
            if self.filter is not None:
                mask &= chunks.filter_masks.documents(self.filter)
            if self.predicate is not None:
                mask &= np.fromiter((bool(self.predicate(c)) for c in chunks.document_categories), bool, len(mask))
            self._cache[key] = mask
        return self._cache[key]

    def row_mask(self, chunks: ChunkSet) -> np.ndarray:
        """Boolean mask over the chunk set's rows. Read-only; the same array on every call for a filter alone
        (kept by the chunk set, so what a leaf derives from it can be kept with it)."""
        if self.only_filter is not None:
            return chunks.filter_masks.rows(self.only_filter)
        mask = self.document_mask(chunks)[chunks.document_index]
        if self.filter is not None and chunks.filters_by_row:  # the document mask holds where any chunk matches
            mask &= chunks.filter_masks.rows(self.filter)
        return mask
