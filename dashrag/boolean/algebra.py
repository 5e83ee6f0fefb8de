"""The fragment algebra: AND, OR and NOT over sets of scored fragments.

Retrieval stays at fragment level all the way (a fragment is a ``ScoredChunk``:
chunk, document id, text, score, source); documents matter only to decide which
fragments survive an AND or a NOT. The rules, with their formulas, are in
docs/boolean_queries.md; in short:

* A ``FragmentSet`` is one branch's result: chunk id -> fragment, plus ``is_filter``,
  true when the branch only restricts documents (category clauses, NOT, the empty
  query) so its scores (all 1.0) carry no relevance.
* AND keeps the fragments of the documents every operand reaches. The operands that
  carry scores combine by a geometric mean of max-normalised scores, rescaled by
  the geometric mean of the operands' maxima:
  ``(prod_i s_i / m_i) ** (1/k) * (prod_i m_i) ** (1/k)`` over the k scored
  operands, which for two is ``sqrt(l_norm * r_norm) * sqrt(l_max * r_max)``. Filter
  operands only restrict (they never add fragments nor change scores); with k = 1
  the scored partner's fragments keep their scores; with only filters, the union of
  their fragments in the shared documents keeps the maximum score.
* A fragment that one scored operand returned and another did not (its document is
  reached by both) is kept; for the operand that missed it, it is credited with that
  operand's lowest returned score, the most an unreturned fragment can have scored.
  So fragments matching every clause themselves rank above those matching one.
* OR is the union, one fragment per chunk id, keeping its maximum score.
* NOT is every fragment of the documents in scope whose document the operand does
  not reach, score 1.0, as a filter.

Scores are assumed non-negative (the leaves' minimum-score cuts guarantee it); in
AND a negative score or maximum counts as zero.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Mapping, Sequence

from dashrag.documents.model import Chunk, ScoredChunk

FILTER_SCORE = 1.0


@dataclass(frozen=True)
class FragmentSet:
    """One branch's fragments by chunk id, and whether the branch is a pure document filter."""

    fragments: Mapping[int, ScoredChunk]
    is_filter: bool = False

    @classmethod
    def of(cls, fragments: Iterable[ScoredChunk], is_filter: bool = False) -> "FragmentSet":
        """Build from fragments; a chunk id seen twice keeps its best score (the OR rule)."""
        best: dict[int, ScoredChunk] = {}
        for fragment in fragments:
            kept = best.get(fragment.id)
            if kept is None or fragment.score > kept.score:
                best[fragment.id] = fragment
        return cls(best, is_filter)

    def __len__(self) -> int:
        return len(self.fragments)

    @cached_property
    def document_ids(self) -> frozenset[str]:
        return frozenset(f.document_id for f in self.fragments.values())

    def ranked(self, limit: int | None = None) -> list[ScoredChunk]:
        """Best first; ties go to the lower chunk id, so every order is reproducible."""
        key = lambda f: (-f.score, f.id)  # noqa: E731
        if limit is not None:
            return heapq.nsmallest(limit, self.fragments.values(), key=key)
        return sorted(self.fragments.values(), key=key)

    def max_score(self) -> float:
        return max((f.score for f in self.fragments.values()), default=0.0)

    def min_score(self) -> float:
        return min((f.score for f in self.fragments.values()), default=0.0)

    def restricted_to(self, document_ids: frozenset[str]) -> "FragmentSet":
        kept = {cid: f for cid, f in self.fragments.items() if f.document_id in document_ids}
        return FragmentSet(kept, self.is_filter)


@dataclass(frozen=True)
class Scope:
    """The chunks a query may reach (the corpus, or the documents the caller allows), by document.

    NOT and the empty query need it: they return fragments no clause retrieved.
    """

    chunks_by_document: Mapping[str, tuple[Chunk, ...]]
    _document_ids: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_document_ids", frozenset(self.chunks_by_document))

    @classmethod
    def from_chunks(cls, chunks: Iterable[Chunk]) -> "Scope":
        grouped: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            grouped.setdefault(chunk.document_id, []).append(chunk)
        return cls({doc: tuple(sorted(cs, key=lambda c: c.position)) for doc, cs in grouped.items()})

    @property
    def document_ids(self) -> frozenset[str]:
        return self._document_ids

    def restricted_to(self, document_ids: Iterable[str]) -> "Scope":
        allowed = frozenset(document_ids)
        return Scope({d: cs for d, cs in self.chunks_by_document.items() if d in allowed})

    def filter_fragments(self, document_ids: Iterable[str], source: str) -> FragmentSet:
        """Every chunk of the given documents (those in scope), score 1.0, as a filter."""
        fragments = {
            chunk.id: ScoredChunk(chunk, FILTER_SCORE, source)
            for doc in document_ids
            for chunk in self.chunks_by_document.get(doc, ())
        }
        return FragmentSet(fragments, is_filter=True)


def geometric_combination(scores: Sequence[float], maxima: Sequence[float]) -> float:
    """``(prod s_i/m_i) ** (1/k) * (prod m_i) ** (1/k)``; for k = 2, ``sqrt(l_norm*r_norm) * sqrt(l_max*r_max)``."""
    k = len(scores)
    if k == 0 or k != len(maxima):
        raise ValueError("geometric_combination needs one maximum per score, and at least one score")
    normalised = [max(s, 0.0) / m if m > 0 else 0.0 for s, m in zip(scores, maxima)]
    return math.prod(normalised) ** (1.0 / k) * math.prod(max(m, 0.0) for m in maxima) ** (1.0 / k)


def combine_and(operands: Sequence[FragmentSet]) -> FragmentSet:
    """AND of two or more branches (rules in the module docstring)."""
    if len(operands) < 2:
        raise ValueError("AND needs at least two operands")
    shared = frozenset.intersection(*(o.document_ids for o in operands))
    scored = [o.restricted_to(shared) for o in operands if not o.is_filter]
    if not scored:
        return FragmentSet.of((f for o in operands for f in o.restricted_to(shared).fragments.values()), is_filter=True)
    if len(scored) == 1:
        return scored[0]
    # maxima and minima of the whole branch, before the restriction to shared documents
    full = [o for o in operands if not o.is_filter]
    maxima = [o.max_score() for o in full]
    floors = [o.min_score() for o in full]
    combined: dict[int, ScoredChunk] = {}
    for chunk_id in sorted({cid for o in scored for cid in o.fragments}):
        present = [o.fragments.get(chunk_id) for o in scored]
        scores = [f.score if f is not None else floor for f, floor in zip(present, floors)]
        base = next(f for f in present if f is not None)
        combined[chunk_id] = base.rescored(
            geometric_combination(scores, maxima), source="and", and_scores=scores, and_maxima=maxima
        )
    return FragmentSet(combined, is_filter=False)


def combine_or(operands: Sequence[FragmentSet]) -> FragmentSet:
    """OR: the union, one fragment per chunk id with its maximum score; a filter only if every operand is."""
    if len(operands) < 2:
        raise ValueError("OR needs at least two operands")
    return FragmentSet.of(
        (f for o in operands for f in o.fragments.values()), is_filter=all(o.is_filter for o in operands)
    )


def complement(operand: FragmentSet, scope: Scope) -> FragmentSet:
    """NOT: every fragment of the in-scope documents the operand does not reach, score 1.0, as a filter."""
    excluded = operand.document_ids
    return scope.filter_fragments((d for d in scope.document_ids if d not in excluded), source="not")
