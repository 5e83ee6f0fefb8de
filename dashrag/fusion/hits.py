"""Gathering the children's lists into one candidate per chunk id.

Every fusion mode starts the same way: walk each child's best-first list, note
where (1-based rank) and with which raw score each chunk appeared, and merge the
appearances of one chunk id across children into one :class:`Candidate`. That is
the dedup by chunk id that docs/design.md asks of every composite, and it is also what
the provenance of a fused chunk reports, so nothing of a child's answer is lost.

A child that lists the same chunk twice (it should not) is read at its first,
best, appearance; the later one is ignored but keeps its place, so the ranks of
the chunks after it are still their positions in the list the child returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from dashrag.documents.model import Chunk, ScoredChunk


@dataclass(frozen=True)
class ChildHit:
    """One child's answer about one chunk."""

    child: int  # index of the child in the fusion's children
    rank: int  # 1-based position in that child's list
    score: float  # the child's own raw score (its meaning stays the child's)


@dataclass
class Candidate:
    """A chunk id seen in at least one child's list, with every child that returned it."""

    chunk: Chunk
    hits: list[ChildHit] = field(default_factory=list)  # in child order

    @property
    def id(self) -> int:
        return self.chunk.id


def gather(results: Sequence[Sequence[ScoredChunk]]) -> list[Candidate]:
    """One :class:`Candidate` per distinct chunk id, in order of first appearance."""
    by_id: dict[int, Candidate] = {}
    for child, child_results in enumerate(results):
        seen_here: set[int] = set()
        for rank, scored in enumerate(child_results, start=1):
            chunk_id = scored.chunk.id
            if chunk_id in seen_here:
                continue
            seen_here.add(chunk_id)
            candidate = by_id.get(chunk_id)
            if candidate is None:
                candidate = by_id[chunk_id] = Candidate(scored.chunk)
            candidate.hits.append(ChildHit(child, rank, float(scored.score)))
    return list(by_id.values())


def fusion_provenance(
    strategy: str,
    fused_score: float,
    hits: Sequence[ChildHit],
    per_child_extra: dict[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON-ready record a fused chunk carries: the mode, its score, and each child's hit.

    ``children`` is keyed by the child's index as a string (JSON object keys are
    strings) and lists every child that returned the chunk -- a child of weight 0
    too, since it did return it, even though it contributed nothing.
    """
    extra = per_child_extra or {}
    children = {
        str(hit.child): {"rank": hit.rank, "score": hit.score, **extra.get(hit.child, {})}
        for hit in hits
    }
    return {"fusion": strategy, "fused_score": fused_score, "children": children}
