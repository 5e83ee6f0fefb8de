"""Segments of collections: how a dense index on Qdrant Edge takes an update at the cost of what changed.

A tree's vectors live in a **base** collection, written once (by the build, or by a compaction) and never
changed after; an update writes a small **delta** collection with the points added since the base, and
hides the base's removed points behind a list of **tombstones** (their chunk ids). A query searches the
base without the tombstones (a ``must_not`` has-id condition inside Edge's search, so the top-k is the
top-k of the live points) and the delta, and merges the two top-k lists by score: exact with respect to
each segment (an exact index answers exactly as a rebuild; an HNSW graph answers as two graphs, docs/scale.md
"Decisions"). The delta is searched in this process, exactly (:class:`DeltaVectors`: its vectors, read from the
delta collection once, scored by one matrix product), not by a second call into Edge: it holds at most
``compact_fraction`` of the base's points, and the second Edge call per query cost more than the base's own
search (docs/scale.md, "Dense on Qdrant Edge HNSW"). When the delta and the tombstones together pass
``compact_fraction`` of the base, the update writes one collection again (the base's files copied, the
tombstones deleted, the delta's points upserted).

Each update writes a *new* delta (the previous delta's files copied and changed, under a temporary name, renamed
in) and the saved reference (``index.json`` in the snapshot) names the base, the delta and the tombstones: the
old tree's reference still names the old delta and tombstones, so a reader of the old tree answers as before
and a kill at any moment leaves the old reference or the new one, each naming complete collections. The
update never opens the base collection (docs/updating.md, docs/scale.md "Dense updates on Qdrant Edge").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from dashrag.core.ranking import top_k_rows
from dashrag.indexes.similarity import is_unit_length, similarity

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


@dataclass(frozen=True)
class DeltaVectors:
    """The delta's points as a matrix held in this process, searched exactly: the delta holds at most
    ``compact_fraction`` of the base (10,000 points at a million), so one product over its rows costs less than
    the hand-off of a second query to Edge's threads. Its scores are Edge's for the same metric (cosine on the
    vectors Edge stored, unit length; euclidean and manhattan negated), so the two lists merge by score."""

    segments: Segments  # what the matrix was read for: a new update names new segments, and a new matrix
    ids: np.ndarray  # the delta's chunk ids, one per row of ``matrix``
    matrix: np.ndarray
    norms: np.ndarray

    @classmethod
    def of(cls, segments: Segments, matrix: np.ndarray) -> DeltaVectors:
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        return cls(segments, np.asarray(segments.delta_ids, dtype=np.int64), matrix,
                   np.linalg.norm(matrix, axis=1).astype(np.float32))

    def search(self, queries: np.ndarray, k: int, metric: str, allowed: np.ndarray | None) -> list[Found]:
        """Per query, the delta's k best (chunk id, score), best first; ``allowed``: a mask over the delta's rows
        (a restriction), applied before the top-k as Edge applies a filter."""
        scores = similarity(queries, self.matrix, self.norms, metric, is_unit_length(self.norms))
        found: list[Found] = []
        for row in np.atleast_2d(scores):
            best = top_k_rows(row, k, allowed)
            found.append(list(zip(self.ids[best].tolist(), row[best].astype(float).tolist())))
        return found


def delta_record(base: str, record: dict[str, Any], count: int) -> dict[str, Any]:
    """What a delta collection records beside itself: the tree's record it serves, over which base, its count."""
    return {"delta_of": base, "tree": {k: v for k, v in record.items() if k != "count"}, "count": count}
