"""Segments of collections: how a dense index on Qdrant Edge takes an update at the cost of what changed.

A tree's vectors live in a **base** collection, written once (by the build, or by a compaction) and never
changed after; an update writes a small **delta** collection with the points added since the base, and
hides the base's removed points behind a list of **tombstones** (their chunk ids). A query searches the
base without the tombstones (a ``must_not`` has-id condition inside Edge's search, so the top-k is the
top-k of the live points) and the delta, and merges the two top-k lists by score: exact with respect to
each segment (an exact index answers exactly as a rebuild; an HNSW graph answers as two graphs, docs/scale.md
"Decisions"). When the delta and the tombstones together pass ``compact_fraction`` of the base, the update
writes one collection again (the base's files copied, the tombstones deleted, the delta's points upserted).

Each update writes a *new* delta (the previous delta's files copied and changed, under a temporary name, renamed
in) and the saved reference (``index.json`` in the snapshot) names the base, the delta and the tombstones: the
old tree's reference still names the old delta and tombstones, so a reader of the old tree answers as before
and a kill at any moment leaves the old reference or the new one, each naming complete collections. The
update never opens the base collection (docs/updating.md, docs/scale.md "Dense updates on Qdrant Edge").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

Found = list[tuple[int, float]]


class Segments(BaseModel):
    """What a saved reference names beyond its base collection: the one schema ``index.json``'s ``segments``
    is written and read by."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_record: dict[str, Any] = Field(description="The base collection's own record (its corpus and count).")
    delta: str | None = Field(None, description="The delta collection, with the points added since the base.")
    delta_ids: tuple[int, ...] = Field((), description="The chunk ids whose points the delta holds.")
    tombstones: tuple[int, ...] = Field((), description="Chunk ids of base points hidden from every search.")

    @property
    def base_count(self) -> int:
        return int(self.base_record["count"])

    def live_count(self) -> int:
        return self.base_count - len(self.tombstones) + len(self.delta_ids)

    def changed(self, gone_ids: list[int], added_ids: list[int], delta: str) -> Segments:
        """The segments after an update that removes ``gone_ids`` and adds ``added_ids`` (this shard's) into the
        new ``delta``: a gone point of the delta leaves it, any other gone point is the base's and is hidden
        (an id can be both: a tombstoned base id given again to a new chunk, which lives in the delta)."""
        in_delta = set(self.delta_ids)
        gone = set(gone_ids)
        kept_delta = [i for i in self.delta_ids if i not in gone]
        hidden = set(self.tombstones) | {i for i in gone if i not in in_delta}
        delta_ids = tuple(kept_delta + list(added_ids))
        return Segments(base_record=self.base_record, delta=delta if delta_ids else None, delta_ids=delta_ids,
                        tombstones=tuple(sorted(hidden)))

    def passes(self, fraction: float) -> bool:
        """Whether the delta and the tombstones together pass ``fraction`` of the base: time to compact."""
        return len(self.delta_ids) + len(self.tombstones) > fraction * self.base_count


def merge_hits(first: Found, second: Found, k: int) -> Found:
    """The k best of two best-first lists (scores higher-is-better), ties in the order given (the base first:
    its ids are the older ones)."""
    return sorted(first + second, key=lambda hit: -hit[1])[:k]


def delta_record(base: str, record: dict[str, Any], count: int) -> dict[str, Any]:
    """What a delta collection records beside itself: the tree's record it serves, over which base, its count."""
    return {"delta_of": base, "tree": {k: v for k, v in record.items() if k != "count"}, "count": count}
