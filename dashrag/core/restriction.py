"""Restrictions: which chunks a leaf may return, applied *before* its top-k.

A filter that ran after top-k would return fewer than k results, or none, when the
allowed chunks rank low; applying it as a mask on the score vector means a
restricted query still returns k chunks wherever k allowed chunks exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

import numpy as np

if TYPE_CHECKING:
    from dashrag.documents.chunk_set import ChunkSet

CategoryPredicate = Callable[[Mapping[str, tuple[str, ...]]], bool]


@dataclass(eq=False)
class Restriction:
    """Allowed documents (by id) and/or a predicate over a document's categories; both must hold."""

    documents: frozenset[str] | None = None
    predicate: CategoryPredicate | None = None
    _cache: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def to_documents(cls, document_ids: Iterable[str]) -> Restriction:
        return cls(documents=frozenset(document_ids))

    @classmethod
    def where_categories(cls, **required: str | Iterable[str]) -> Restriction:
        """``where_categories(COUNTRY=["IQ", "SY"])``: every named category has one of the values."""
        wanted = {k: {v} if isinstance(v, str) else set(v) for k, v in required.items()}
        return cls(predicate=lambda cats: all(wanted[k] & set(cats.get(k, ())) for k in wanted))

    def document_mask(self, chunks: ChunkSet) -> np.ndarray:
        """Boolean mask over the chunk set's documents (cached per chunk set)."""
        key = id(chunks)
        if key not in self._cache:
            mask = np.ones(len(chunks.document_ids), dtype=bool)
            if self.documents is not None:
                mask &= np.fromiter((d in self.documents for d in chunks.document_ids), bool, len(mask))
            if self.predicate is not None:
                mask &= np.fromiter((bool(self.predicate(c)) for c in chunks.document_categories), bool, len(mask))
            self._cache[key] = mask
        return self._cache[key]

    def row_mask(self, chunks: ChunkSet) -> np.ndarray:
        """Boolean mask over the chunk set's rows."""
        return self.document_mask(chunks)[chunks.document_index]
