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

Filters are lazy: ``Scope.filter_fragments`` (category clauses, NOT, TRUE) returns a
``FilterFragments`` mapping that builds its fragments only when one is asked for, since
a filter that only narrows a scored branch needs its documents, never its fragments;
``IndexedDocuments`` lets an index hand over a document set together with its mask and
chunk count, so nothing walks thousands of document ids in Python per query.

Scores are assumed non-negative (the leaves' minimum-score cuts guarantee it); in
AND a negative score or maximum counts as zero.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from dashrag.documents.model import Chunk, ScoredChunk

FILTER_SCORE = 1.0
PARTIAL_SORT_FROM = 2000  # a set this large asked for a few best fragments is partially sorted, not kept sorted


def _RANK_KEY(fragment: ScoredChunk) -> tuple[float, int]:
    return (-fragment.score, fragment.chunk.id)


def memo_of(result: FragmentSet) -> dict[Any, Any]:
    """Where a frozen ``FragmentSet`` keeps values derived from it (rankings, listings), computed
    once: its instance dictionary, which ``frozen`` leaves writable to the class's own code."""
    return result.__dict__


@dataclass(frozen=True)
class FragmentSet:
    """One branch's fragments by chunk id, and whether the branch is a pure document filter.

    ``known_documents``, when given, is ``docs(fragments)`` computed by whoever built the
    set (a category index knows it without looking at a fragment), so a large filter
    never has to be walked just to learn its documents.
    """

    fragments: Mapping[int, ScoredChunk]
    is_filter: bool = False
    known_documents: frozenset[str] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, fragments: Iterable[ScoredChunk], is_filter: bool = False) -> FragmentSet:
        """Build from fragments; a chunk id seen twice keeps its best score (the OR rule)."""
        best: dict[int, ScoredChunk] = {}
        for fragment in fragments:
            kept = best.get(fragment.id)
            if kept is None or fragment.score > kept.score:
                best[fragment.id] = fragment
        return cls(best, is_filter)

    def __len__(self) -> int:
        return len(self.fragments)

    @property
    def document_ids(self) -> frozenset[str]:
        """``docs(fragments)``, computed once (a plain memo: ``cached_property`` takes a lock per first use)."""
        found = self.__dict__.get("_document_ids")
        if found is None:
            found = self.known_documents
            if found is None:
                found = frozenset(f.document_id for f in self.fragments.values())
            self.__dict__["_document_ids"] = found
        return found

    def ranked(self, limit: int | None = None) -> list[ScoredChunk]:
        """Best first; ties go to the lower chunk id, so every order is reproducible.

        The full ranking is computed once and kept (a trace, the AND above and the
        selection all ask for it); a small ``limit`` of a large set is a partial sort.
        """
        cached = self.__dict__.get("_ranking")
        if (
            cached is None
            and limit is not None
            and len(self.fragments) > PARTIAL_SORT_FROM
            and limit * 4 < len(self.fragments)
        ):
            return heapq.nsmallest(limit, self.fragments.values(), key=_RANK_KEY)
        if cached is None:
            cached = self.__dict__["_ranking"] = sorted(self.fragments.values(), key=_RANK_KEY)
        return cached[:limit] if limit is not None else list(cached)

    def top_scores(self, limit: int) -> list[float]:
        """The ``limit`` best scores; a category filter not yet built answers without building it."""
        if isinstance(self.fragments, FilterFragments) and not self.fragments.built:
            return [FILTER_SCORE] * min(limit, len(self.fragments))
        memo = memo_of(self)
        key = ("_top_scores", limit)
        found = memo.get(key)
        if found is None:
            found = memo[key] = [f.score for f in self.ranked(limit)]
        return list(found)

    def max_score(self) -> float:
        return max((f.score for f in self.fragments.values()), default=0.0)

    def min_score(self) -> float:
        return min((f.score for f in self.fragments.values()), default=0.0)

    def restricted_to(self, document_ids: frozenset[str]) -> FragmentSet:
        if self.document_ids <= document_ids:
            return self
        kept = {cid: f for cid, f in self.fragments.items() if f.document_id in document_ids}
        return FragmentSet(kept, self.is_filter)


class IndexedDocuments(frozenset):
    """A set of document ids that also carries what an index knew when it made it.

    ``mask`` is the set as a boolean array over the corpus's document order,
    ``chunk_count`` the number of chunks of those documents, ``universe`` the
    ``Scope.universe`` every id belongs to (any may be ``None``), and ``memo`` a place
    for a consumer to keep what it derives from the set (a row mask). The algebra
    passes such a set through unchanged wherever the set itself is kept (a scope
    narrowed to a subset of itself, a filter's documents), so a consumer (a
    retriever's restriction, a filter's length, a subset test) reads them instead of
    walking thousands of ids in Python. An operation that makes a new set makes a plain one.
    """

    __slots__ = ("mask", "chunk_count", "universe", "memo")
    mask: Any
    chunk_count: int | None
    universe: Any
    memo: dict[Any, Any]

    def __new__(
        cls, ids: Iterable[str], mask: Any = None, chunk_count: int | None = None, universe: Any = None
    ) -> IndexedDocuments:
        made = super().__new__(cls, ids)
        made.mask = mask
        made.chunk_count = chunk_count
        made.universe = universe
        made.memo = {}
        return made

    def __init__(self, ids: Iterable[str], mask: Any = None, chunk_count: int | None = None, universe: Any = None):
        super().__init__()


def _within(documents: frozenset[str], scope: Scope) -> bool:
    """``documents <= scope.document_ids``, answered without a pass when the set says it was made
    from the scope's whole universe."""
    if scope.documents is None and getattr(documents, "universe", None) is scope.universe:
        return True
    return documents <= scope.document_ids


class FilterFragments(Mapping[int, ScoredChunk]):
    """Every chunk of some documents at score 1.0, built only when a fragment is asked for.

    A category clause can reach most of a corpus; in the usual query it only narrows
    a scored branch (``"phrase" AND YEAR=2020``), which needs its documents, never
    its fragments. Building thousands of fragments per query for nothing is what
    would make a filter cost more than the search it filters.
    """

    def __init__(self, universe: Mapping[str, tuple[Chunk, ...]], documents: Iterable[str], source: str):
        self._universe = universe
        self._documents = documents
        self._source = source
        self._built: dict[int, ScoredChunk] | None = None
        self._length: int | None = None

    @property
    def built(self) -> bool:
        return self._built is not None

    @property
    def universe(self) -> Mapping[str, tuple[Chunk, ...]]:
        return self._universe

    @property
    def source(self) -> str:
        return self._source

    def _build(self) -> dict[int, ScoredChunk]:
        if self._built is None:
            self._built = {
                chunk.id: ScoredChunk(chunk, FILTER_SCORE, self._source)
                for doc in self._documents
                for chunk in self._universe.get(doc, ())
            }
        return self._built

    def __getitem__(self, chunk_id: int) -> ScoredChunk:
        return self._build()[chunk_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._build())

    def __len__(self) -> int:
        if self._built is not None:
            return len(self._built)
        if self._length is None:
            known = getattr(self._documents, "chunk_count", None)
            universe = self._universe
            self._length = known if known is not None else sum(map(len, map(universe.__getitem__, self._documents)))
        return self._length


@dataclass(frozen=True, eq=False)
class Scope:
    """The chunks a query may reach (the corpus, or the documents the caller allows), by document.

    NOT and the empty query need it: they return fragments no clause retrieved.
    ``universe`` holds every document's chunks and is shared, never copied, by the
    narrower scopes ``restricted_to`` makes, so narrowing costs a set intersection;
    ``documents`` is the part of it in scope (``None``: all of it).
    """

    universe: Mapping[str, tuple[Chunk, ...]]
    documents: frozenset[str] | None = None
    document_ids: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "document_ids", frozenset(self.universe) if self.documents is None else self.documents)

    @classmethod
    def from_chunks(cls, chunks: Iterable[Chunk]) -> Scope:
        grouped: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            grouped.setdefault(chunk.document_id, []).append(chunk)
        return cls({doc: tuple(sorted(cs, key=lambda c: c.position)) for doc, cs in grouped.items()})

    @property
    def is_universe(self) -> bool:
        """True when nothing of the universe is out of scope."""
        return self.documents is None or len(self.documents) == len(self.universe)

    @property
    def chunks_by_document(self) -> Mapping[str, tuple[Chunk, ...]]:
        if self.documents is None:
            return self.universe
        return {doc: self.universe[doc] for doc in self.documents}

    def restricted_to(self, document_ids: Iterable[str]) -> Scope:
        allowed = document_ids if isinstance(document_ids, frozenset) else frozenset(document_ids)
        if _within(allowed, self):
            return Scope(self.universe, allowed)
        return Scope(self.universe, self.document_ids & allowed)

    def filter_fragments(self, document_ids: Iterable[str], source: str) -> FragmentSet:
        """Every chunk of the given documents (those in scope), score 1.0, as a filter (built lazily)."""
        wanted = document_ids if isinstance(document_ids, frozenset) else frozenset(document_ids)
        inside = wanted if _within(wanted, self) else wanted & self.document_ids
        return FragmentSet(FilterFragments(self.universe, inside, source), is_filter=True, known_documents=inside)


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
        lazy = _lazy_filter_and(operands, shared)
        if lazy is not None:
            return lazy
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


def _lazy_filter_and(operands: Sequence[FragmentSet], shared: frozenset[str]) -> FragmentSet | None:
    """AND of unbuilt category/NOT filters over one universe, still unbuilt: every chunk of
    the shared documents at 1.0, sourced like the first operand (what ``FragmentSet.of`` keeps)."""
    parts = [o.fragments for o in operands if isinstance(o.fragments, FilterFragments) and not o.fragments.built]
    if len(parts) != len(operands):
        return None
    first = parts[0]
    if any(p.universe is not first.universe for p in parts):
        return None
    return FragmentSet(FilterFragments(first.universe, shared, first.source), is_filter=True, known_documents=shared)


def combine_or(operands: Sequence[FragmentSet]) -> FragmentSet:
    """OR: the union, one fragment per chunk id with its maximum score; a filter only if every operand is."""
    if len(operands) < 2:
        raise ValueError("OR needs at least two operands")
    return FragmentSet.of(
        (f for o in operands for f in o.fragments.values()), is_filter=all(o.is_filter for o in operands)
    )


def complement(operand: FragmentSet, scope: Scope) -> FragmentSet:
    """NOT: every fragment of the in-scope documents the operand does not reach, score 1.0, as a filter."""
    return scope.filter_fragments(scope.document_ids - operand.document_ids, source="not")
