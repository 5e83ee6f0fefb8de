"""Selection after retrieval and reranking: which fragments (or documents) a boolean query returns.

Four pure steps, each a function of a ranked fragment list and ``SelectionThresholds``:

* ``fast_path_select`` (no reranker): drop fragments whose *document* scores below
  ``min_document_score`` (a document scores its best fragment), keep at most
  ``max_fragments_per_document`` per document, best first, sort globally, keep ``top_m``.
* ``three_tier_select`` (after reranking): tier 1 keeps every fragment scoring at
  least ``min_score``. If none qualifies, tier 2 takes the top ``fallback_top_n`` and
  adds the best fragment of each further document, in score order, until
  ``min_documents`` distinct documents are covered or ``max_fragments`` fragments are
  held (fragments of documents already covered add no diversity, so they are skipped).
* ``select_documents`` (tier 3, ``return_documents``): one entry per document scored
  by its best fragment (max-pool); documents below ``min_score`` are dropped, but at
  least ``min_documents`` are kept (the best ones) whenever that many exist.
* ``fill_up``: tops a selection up to ``fill_up_target_documents`` documents with the
  best below-threshold fragment of each new document, best first, while the
  selection's total text stays within ``fill_up_max_chars`` characters (a fragment
  that would overflow the budget is skipped and the next, shorter one is tried).

Every ordering is score descending, then chunk id ascending, so results reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterable, Sequence

from dashrag.documents.model import ScoredChunk
from dashrag.errors import ConfigError


@dataclass(frozen=True)
class SelectionThresholds:
    """The selection parameters and their defaults (a component exposes them as params)."""

    # fast path (the three values are this library's choice; the issue fixes no default)
    min_document_score: float = 0.10
    max_fragments_per_document: int = 3
    top_m: int = 100
    # reranking in rounds
    rerank_round_size: int = 5000
    rerank_max_chars: int = 24000
    # three-tier diversity selection
    min_score: float = 0.10
    fallback_top_n: int = 50
    min_documents: int = 5
    max_fragments: int = 100
    # fill-up (the character budget is this library's choice)
    fill_up_target_documents: int = 10
    fill_up_max_chars: int = 20000

    def __post_init__(self) -> None:
        counts = [f.name for f in fields(self) if isinstance(f.default, int)]
        problems = [f"{name} must be >= 1" for name in counts if getattr(self, name) < 1]
        if self.fallback_top_n > self.max_fragments:
            problems.append(f"fallback_top_n ({self.fallback_top_n}) must be <= max_fragments ({self.max_fragments})")
        if problems:
            raise ConfigError("; ".join(problems))


@dataclass(frozen=True)
class DocumentHit:
    """A document scored by its best fragment; ``fragments`` are all of its fragments, best first."""

    document_id: str
    score: float
    best: ScoredChunk
    fragments: tuple[ScoredChunk, ...]


def rank(fragments: Iterable[ScoredChunk]) -> list[ScoredChunk]:
    """Best first, ties to the lower chunk id; one entry per chunk id (its best score)."""
    best: dict[int, ScoredChunk] = {}
    for fragment in fragments:
        if fragment.id not in best or fragment.score > best[fragment.id].score:
            best[fragment.id] = fragment
    return sorted(best.values(), key=lambda f: (-f.score, f.id))


def aggregate_documents(fragments: Iterable[ScoredChunk]) -> list[DocumentHit]:
    """Max-pool fragments into documents, best document first (ties to the lower document id)."""
    grouped: dict[str, list[ScoredChunk]] = {}
    for fragment in rank(fragments):
        grouped.setdefault(fragment.document_id, []).append(fragment)
    hits = [DocumentHit(doc, frags[0].score, frags[0], tuple(frags)) for doc, frags in grouped.items()]
    return sorted(hits, key=lambda h: (-h.score, h.document_id))


def fast_path_select(fragments: Sequence[ScoredChunk], t: SelectionThresholds) -> list[ScoredChunk]:
    """Document-score cut, per-document cap, global sort, top M."""
    kept: list[ScoredChunk] = []
    for hit in aggregate_documents(fragments):
        if hit.score >= t.min_document_score:
            kept.extend(hit.fragments[: t.max_fragments_per_document])
    return rank(kept)[: t.top_m]


def three_tier_select(
    fragments: Sequence[ScoredChunk], t: SelectionThresholds
) -> tuple[list[ScoredChunk], dict[str, Any]]:
    """Tiers 1 and 2 (module docstring); returns the selection and a trace record saying which tier decided."""
    ranked = rank(fragments)
    above = [f for f in ranked if f.score >= t.min_score]
    if above:
        return above, {"tier": "threshold", "selected": len(above), "documents": _document_count(above)}
    selected = ranked[: t.fallback_top_n]
    covered = {f.document_id for f in selected}
    for fragment in ranked[t.fallback_top_n :]:
        if len(covered) >= t.min_documents or len(selected) >= t.max_fragments:
            break
        if fragment.document_id not in covered:
            selected.append(fragment)
            covered.add(fragment.document_id)
    info = {"tier": "diversity" if ranked else "empty", "selected": len(selected), "documents": len(covered)}
    return selected, info


def select_documents(fragments: Sequence[ScoredChunk], t: SelectionThresholds) -> list[DocumentHit]:
    """Tier 3: max-pooled documents at or above ``min_score``, never fewer than ``min_documents`` where they exist."""
    hits = aggregate_documents(fragments)
    above = [h for h in hits if h.score >= t.min_score]
    return above if len(above) >= t.min_documents else hits[: t.min_documents]


def fill_up(
    selected: Sequence[ScoredChunk], candidates: Sequence[ScoredChunk], t: SelectionThresholds
) -> tuple[list[ScoredChunk], dict[str, Any]]:
    """Add the best below-threshold fragment of new documents until the target count or the budget stops it."""
    result = list(selected)
    covered = {f.document_id for f in result}
    chosen = {f.id for f in result}
    used_chars = sum(len(f.chunk.text) for f in result)
    added = skipped_for_budget = 0
    for fragment in rank(candidates):
        if len(covered) >= t.fill_up_target_documents:
            break
        if fragment.score >= t.min_score or fragment.id in chosen or fragment.document_id in covered:
            continue
        if used_chars + len(fragment.chunk.text) > t.fill_up_max_chars:
            skipped_for_budget += 1
            continue
        result.append(fragment)
        covered.add(fragment.document_id)
        chosen.add(fragment.id)
        used_chars += len(fragment.chunk.text)
        added += 1
    info = {"added": added, "documents": len(covered), "chars": used_chars, "skipped_for_budget": skipped_for_budget}
    return rank(result), info


def _document_count(fragments: Iterable[ScoredChunk]) -> int:
    return len({f.document_id for f in fragments})
