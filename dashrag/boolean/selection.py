"""Selection after retrieval and reranking: which fragments (or documents) a boolean query returns.

Pure steps, each a function of a ranked fragment list and ``SelectionThresholds``,
applied in the reference's order:

* ``fast_path_select`` (no reranker): drop fragments whose *document* scores below
  ``min_document_score`` (a document scores its best fragment), keep at most
  ``max_fragments_per_document`` per document, best first, sort globally, keep ``top_m``.
* ``three_tier_select`` (after reranking), tiers 1 and 2: tier 1 keeps the fragments
  scoring at least ``min_score``, at most ``max_fragments`` of them. If none qualifies,
  tier 2 takes the top ``fallback_top_n`` and adds the best fragment of each further
  document, in score order, until ``min_documents`` distinct documents are covered or
  ``max_fragments`` fragments are held (fragments of covered documents add no diversity).
* ``select_documents`` (tier 3, the document safety net, with ``return_documents``):
  the tier 1/2 selection max-pooled into documents; documents below ``min_score`` are
  dropped, but at least ``min_documents`` are kept (the best ones), topped up from the
  whole reranked list when the selection covers fewer.
* ``within_documents``: after reranking (and the fill-up, when it runs), at most
  ``max_reranked_documents`` documents (10, the reference's ``MAX_RERANKING_OUTPUT_DOC``):
  the fragments of the best ones.
* ``fill_up``: a *separate, later* step in the reference (the component runs it only
  when asked): while the selection holds fewer than ``fill_up_target_fragments``
  fragments, add the best below-threshold candidates, as long as the selection's total
  text stays within ``fill_up_max_chars`` (a fragment that would overflow is skipped
  and the next, shorter one tried). It logs once when it triggers.

Every ordering is score descending, then chunk id ascending, so results reproduce.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from typing import Any, Iterable, Sequence

from dashrag.documents.model import ScoredChunk
from dashrag.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SelectionThresholds:
    """The selection parameters and their defaults (a component exposes them as params)."""

    # fast path (the reference's document-level cutoff and fragment cap; the per-document cap is this library's)
    min_document_score: float = 0.05
    max_fragments_per_document: int = 3
    top_m: int = 1000
    # reranking in rounds
    rerank_round_size: int = 5000
    rerank_max_chars: int = 24000
    # three-tier diversity selection
    min_score: float = 0.10
    fallback_top_n: int = 50
    min_documents: int = 5
    max_fragments: int = 100
    # after reranking: the most documents returned (the reference's MAX_RERANKING_OUTPUT_DOC)
    max_reranked_documents: int = 10
    # fill-up, the reference's later step (the character budget is this library's choice)
    fill_up_target_fragments: int = 10
    fill_up_max_chars: int = 20000

    def __post_init__(self) -> None:
        counts = [f.name for f in fields(self) if isinstance(f.default, int)]
        problems = [f"{name} must be >= 1" for name in counts if getattr(self, name) < 1]
        if self.fallback_top_n > self.max_fragments:
            problems.append(f"fallback_top_n ({self.fallback_top_n}) must be <= max_fragments ({self.max_fragments})")
        if self.min_documents > self.max_reranked_documents:
            problems.append(f"min_documents ({self.min_documents}) must be <= max_reranked_documents "
                            f"({self.max_reranked_documents})")
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
        kept = above[: t.max_fragments]
        return kept, {"tier": "threshold", "qualified": len(above), "selected": len(kept),
                      "documents": _document_count(kept)}
    selected = ranked[: t.fallback_top_n]
    covered = {f.document_id for f in selected}
    for fragment in ranked[t.fallback_top_n :]:
        if len(covered) >= t.min_documents or len(selected) >= t.max_fragments:
            break
        if fragment.document_id not in covered:
            selected.append(fragment)
            covered.add(fragment.document_id)
    info = {"tier": "diversity" if ranked else "empty", "qualified": 0, "selected": len(selected),
            "documents": len(covered), "best_score": ranked[0].score if ranked else None}
    return selected, info


def select_documents(selected: Sequence[ScoredChunk], t: SelectionThresholds,
                     ranked: Sequence[ScoredChunk] = ()) -> list[DocumentHit]:
    """Tier 3: the selection's documents at or above ``min_score``, never fewer than ``min_documents``
    where they exist (the selection's best, then the best further documents of ``ranked``)."""
    hits = aggregate_documents(selected)
    above = [h for h in hits if h.score >= t.min_score]
    if len(above) >= t.min_documents:
        return above
    kept = hits[: t.min_documents]
    if len(kept) < t.min_documents:
        covered = {h.document_id for h in kept}
        kept += [h for h in aggregate_documents(ranked) if h.document_id not in covered][: t.min_documents - len(kept)]
    return kept


def fill_up(
    selected: Sequence[ScoredChunk], candidates: Sequence[ScoredChunk], t: SelectionThresholds
) -> tuple[list[ScoredChunk], dict[str, Any]]:
    """Add the best below-threshold candidates until the selection holds the target number of *fragments*
    (the reference's ``len(fragments_by_id) < 10``) or the character budget stops it."""
    result = list(selected)
    chosen = {f.id for f in result}
    used_chars = sum(len(f.chunk.text or "") for f in result)
    triggered = len(chosen) < t.fill_up_target_fragments
    added = skipped_for_budget = 0
    before = len(chosen)
    for fragment in rank(candidates) if triggered else ():
        if len(chosen) >= t.fill_up_target_fragments:
            break
        if fragment.score >= t.min_score or fragment.id in chosen:
            continue
        size = len(fragment.chunk.text or "")
        if used_chars + size > t.fill_up_max_chars:
            skipped_for_budget += 1
            continue
        result.append(fragment)
        chosen.add(fragment.id)
        used_chars += size
        added += 1
    if added:  # the reference logs the fill-up only when it adds something
        log.info("fill-up: %d fragment(s) selected, fewer than %d; added %d below-threshold candidate(s)",
                 before, t.fill_up_target_fragments, added)
    info = {"triggered": triggered, "added": added, "fragments": len(chosen), "chars": used_chars,
            "skipped_for_budget": skipped_for_budget}
    return rank(result), info


def within_documents(fragments: Sequence[ScoredChunk], limit: int) -> tuple[list[ScoredChunk], int]:
    """The fragments of the first ``limit`` documents met in ``fragments`` (kept in order), and how many
    further documents were dropped: the cap on documents after reranking."""
    documents = list(dict.fromkeys(f.document_id for f in fragments))
    allowed = set(documents[:limit])
    return [f for f in fragments if f.document_id in allowed], max(0, len(documents) - limit)


def _document_count(fragments: Iterable[ScoredChunk]) -> int:
    return len({f.document_id for f in fragments})
