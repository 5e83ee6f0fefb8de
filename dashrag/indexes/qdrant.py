"""QdrantVectorIndex: the dense node's vectors in a Qdrant collection (embedded on Qdrant Edge, or a server).

Where the collection lives, what each point's payload holds, the ownership record and
the payload filters are shared with the keyword index (``qdrant_engine.py``). This
module adds the vectors: one unnamed vector per point, searched with ``exact`` or
through Qdrant's HNSW graph (``hnsw_m``, ``hnsw_ef_construction``, ``hnsw_ef``), optionally
over quantized vectors (``int8`` scalar or ``binary``, rescored with the originals),
scores converted to the in-process ones (cosine and dot as they are, euclidean negated),
so the same tree ranks the same way.

Qdrant builds the graph only for segments above ``hnsw_threshold_kb`` KB of vectors
(its ``indexing_threshold`` / ``full_scan_threshold``, default 10,000 KB, about 6,500
384-d vectors) and scans smaller ones exactly: a small corpus is searched exactly
whatever ``exact`` says unless the threshold is lowered. An ``exact`` index on Edge
builds no graph at all.

The collection's record (``structure``) names what it was built with where it differs
from Qdrant's defaults, so a node asking for another graph or quantization never takes
it for its own; the defaults record nothing, as trees saved before these options did.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field, ValidationError

from dashrag.core.persistence import load_json
from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.documents.chunk_set import rows_outside
from dashrag.errors import EngineError, PersistenceError
from dashrag.filters.qdrant import PAYLOAD_KEY, PayloadIndex
from dashrag.indexes.base import Hits, IndexIdentity, VectorIndex
from dashrag.indexes.engine import REFERENCE_FILE, UPLOAD_BATCH, describe_difference, object_name, payloads_of
from dashrag.indexes.qdrant_engine import QdrantConnectionParams, QdrantEngine, filter_payload_indexes
from dashrag.indexes.qdrant_segments import DeltaVectors, Segments, delta_record, merge_hits
from dashrag.indexes.qdrant_store import DenseLayout, Layout, SearchOptions

if TYPE_CHECKING:
    from dashrag.documents.changes import CorpusChange
    from dashrag.documents.chunk_set import ChunkSet

DISTANCES = {"cosine": "Cosine", "dot": "Dot", "euclidean": "Euclid", "manhattan": "Manhattan"}
QDRANT_DEFAULTS = {"hnsw_m": 16, "hnsw_ef_construction": 100, "hnsw_threshold_kb": 10_000, "quantization": "none"}


class QdrantParams(QdrantConnectionParams):
    exact: bool = Field(False, description=(
        "Exact (brute-force) search inside the engine; false: the engine's HNSW index (approximate, faster at scale)."))
    hnsw_ef: int | None = Field(None, ge=1, description="HNSW search breadth (default: the collection's ef_construct).")
    hnsw_m: int = Field(16, ge=4, le=128, description="HNSW graph degree (built once, with the collection).")
    hnsw_ef_construction: int = Field(100, ge=4, le=1000, description="HNSW build breadth (Qdrant's ef_construct).")
    hnsw_threshold_kb: int = Field(10_000, ge=1, description=(
        "Segments (and filter matches) below this many KB of vectors are scanned exactly, larger ones get and use "
        "the HNSW graph (Qdrant's indexing_threshold and full_scan_threshold)."))
    quantization: Literal["none", "int8", "binary"] = Field("none", description=(
        "Quantized copy of the vectors searched first: int8 scalar (4x smaller) or binary (32x; for "
        "high-dimensional embeddings); exact search always uses the original vectors."))
    rescore: bool = Field(True, description="Quantized search: re-rank the candidates by their original vectors.")
    oversampling: float | None = Field(None, ge=1.0, description=(
        "Quantized search: fetch this many times top_k candidates before rescoring (default: Qdrant's, 1)."))
    compact_fraction: float = Field(0.01, ge=0.0, description=(
        "Embedded (Qdrant Edge) updates: added points go to a small delta collection and removed ones are hidden, "
        "until together they pass this fraction of the base collection's points; then the update writes one "
        "collection again. 0: every update does."))


@register(kind="vector_index", icon="Database", category="index",
          en=("Qdrant collection",
              "Chunk vectors in a Qdrant collection: embedded (Qdrant Edge, in this process), or a server or cluster."),
          es=("Colección de Qdrant",
              "Vectores de los fragmentos en una colección de Qdrant: embebida (Qdrant Edge, en este proceso), "
              "o un servidor o clúster."),
          representation="Qdrant {collection} exact={exact}")
class QdrantVectorIndex(QdrantEngine[QdrantParams], VectorIndex[QdrantParams]):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._segments: Segments | None = None  # None: one collection, nothing hidden (a build, a compaction)
        self._base_count_due: int | None = None  # the base's point count, checked when a search first needs it
        self._replaced_collections: list[str] = []
        self._delta_held: DeltaVectors | None = None  # the delta's vectors, read when a search first needs them

    def structure(self) -> dict[str, Any]:
        p = self.params
        built = {name: getattr(p, name) for name, default in QDRANT_DEFAULTS.items() if getattr(p, name) != default}
        if p.exact and self.store.graph_follows_exact:
            built["graph"] = False
        return built

    def layout(self, dimension: int, metric: str) -> Layout:
        return Layout(dense=self.dense_layout(dimension, metric), payload_indexes=self.payload_indexes())

    def dense_layout(self, dimension: int, metric: str) -> DenseLayout:
        p = self.params
        return DenseLayout(size=dimension, distance=DISTANCES[metric], hnsw_m=p.hnsw_m,
                           hnsw_ef_construct=p.hnsw_ef_construction, threshold_kb=p.hnsw_threshold_kb,
                           quantization=p.quantization, graph=not p.exact)

    def actual_dimension(self) -> int:
        with self.engine_errors("reading the collection's configuration"):
            stored = self.store.stored_vectors(self.name)
        if stored.size is None:
            raise EngineError(f"{self.where()} has no unnamed vector per point (named: {list(stored.named)}, "
                              f"sparse: {list(stored.sparse)})")
        return stored.size

    def upload(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        chunks = self.require_infra().chunks
        with self.engine_errors("uploading vectors"):
            for start in range(0, len(rows), UPLOAD_BATCH * 8):
                part = rows[start:start + UPLOAD_BATCH * 8]
                self.store.upsert_dense(self.name, chunks.ids[part].tolist(), vectors[start:start + len(part)],
                                        payloads_of(chunks, part.tolist()))

    def add(self, vectors: Any, identity: IndexIdentity) -> None:
        """A whole new collection (a build, or an update that rebuilds): one segment, nothing hidden."""
        super().add(vectors, identity)
        self._segments = None
        self._base_count_due = None

    def update_vectors(self, change: CorpusChange, added: np.ndarray, identity: IndexIdentity) -> None:
        """On Qdrant Edge, what ``change`` adds goes to a new small *delta* collection (the previous delta's files
        copied and changed) and what it removes from the base collection is hidden by tombstones that the saved
        reference names; the base is not opened (``qdrant_segments.py``). Once the delta and the tombstones pass
        ``compact_fraction`` of the base, the base's files are copied with the change applied (:meth:`_compact`).
        A server, a configured collection name (the new collection would be the old one) and a compaction whose
        copy cannot take the delta's filtered fields take the rebuild (docs/scale.md, "Dense updates on Qdrant
        Edge")."""
        if not (self.store.copies_collections and self.configured_name() is None):
            self._rebuild(change, added, identity)
            return
        wanted = self.record_for(identity)
        chunks = change.new
        gone_ids = change.old.ids[rows_outside(change.kept_rows, len(change.old))]
        new_rows = np.arange(len(change.kept_rows), len(chunks), dtype=np.int64)
        mine = new_rows[chunks.ids[new_rows] % self.params.shards == self.params.shard]
        before = self._segments or Segments(base_record=self.require_record())
        after = before.changed(gone_ids[gone_ids % self.params.shards == self.params.shard].tolist(),
                               chunks.ids[mine].tolist(), self._delta_name(wanted))
        if after.passes(self.params.compact_fraction):
            self._compact(change, added, identity, after)
            return
        self._write_delta(before, after, change, added, mine, wanted)
        self._segments, self._record, self._base_count_due = after, wanted, None

    def require_record(self) -> dict[str, Any]:
        if self._record is None:
            raise EngineError(f"{self.engine_name}: the index of this node is not built or loaded yet")
        return self._record

    def _delta_name(self, wanted: dict[str, Any]) -> str:
        """A delta's name: derived from the tree's record and its base, as a collection's is from its record."""
        return object_name(f"{self.name_prefix}_delta", {**wanted, "delta_of": self.name})

    def _write_delta(self, before: Segments, after: Segments, change: CorpusChange, added: np.ndarray,
                     mine: np.ndarray, wanted: dict[str, Any]) -> None:
        """Write ``after.delta``: a copy of ``before.delta``'s files (or a new collection) without the gone
        points it held, with this shard's added ones (``mine``: rows of the new corpus), under a temporary name,
        renamed in. A complete delta of that name and record (an update killed before its save) is taken as is."""
        name = after.delta
        if name is None:
            return
        record = delta_record(self.name, wanted, len(after.delta_ids))
        chunks = change.new
        with self.engine_errors("writing the delta collection"):
            if self.store.exists(name):
                if self.store.read_record(name) == record and self.store.count(name) == record["count"]:
                    return
                self.store.drop(name)
            wanted_indexes = indexes_of(chunks, mine)
            if before.delta is None:
                layout = Layout(dense=self.dense_layout(wanted["dimension"], wanted["metric"]),
                                payload_indexes=wanted_indexes)
                written = self.store.new_collection(name, layout)
            else:
                written = self.store.changed_copy(before.delta, name)
            with written as partial:
                self.store.add_payload_indexes(partial, wanted_indexes)
                self.store.delete_points(partial, sorted(set(before.delta_ids) - set(after.delta_ids)))
                self._upsert(partial, chunks, mine, added[mine - len(change.kept_rows)])
                self.store.finish(partial)
                self.store.write_record(partial, record)

    def _compact(self, change: CorpusChange, added: np.ndarray, identity: IndexIdentity, after: Segments) -> None:
        """One collection again: the base's files copied, its tombstones deleted, the delta's points (those
        ``after`` keeps, read back from the old delta, and the added ones) upserted. The rebuild instead when
        the copy's payload indexes do not cover the fields those points are filtered on, or when the target
        exists already (its reuse-or-refuse rules)."""
        target = self._choose_name(identity)
        chunks = change.new
        rows = chunks.rows_of(list(after.delta_ids))
        if target == self.name or self.collection_exists(target) or not self._indexes_cover(self.name, chunks, rows):
            self._rebuild(change, added, identity)
            return
        self._verify_base()
        wanted = self.record_for(identity)
        first_new = len(change.kept_rows)
        with self.engine_errors("compacting the collection"):
            vectors = np.zeros((len(rows), identity.dimension), dtype=np.float32)
            old = rows < first_new
            if old.any():
                vectors[old] = self._segment_vectors(chunks.ids[rows[old]].tolist())
            vectors[~old] = added[rows[~old] - first_new]
            with self.store.changed_copy(self.name, target) as partial:
                self.store.delete_points(partial, list(after.tombstones))
                self._upsert(partial, chunks, rows, vectors)
                self.store.finish(partial)
                self.store.write_record(partial, wanted)
        self._name, self._record, self._segments, self._base_count_due = target, wanted, None, None

    def _rebuild(self, change: CorpusChange, added: np.ndarray, identity: IndexIdentity) -> None:
        """Every vector uploaded again to a new collection (the kept ones read back): ``VectorIndex``'s update."""
        super().update_vectors(change, added, identity)

    def _upsert(self, name: str, chunks: ChunkSet, rows: np.ndarray, vectors: np.ndarray) -> None:
        for start in range(0, len(rows), UPLOAD_BATCH * 8):
            part = rows[start:start + UPLOAD_BATCH * 8]
            self.store.upsert_dense(name, chunks.ids[part].tolist(), vectors[start:start + len(part)],
                                    payloads_of(chunks, part.tolist()))

    def _indexes_cover(self, name: str, chunks: ChunkSet, rows: np.ndarray) -> bool:
        """Whether collection ``name``'s payload indexes cover every field and kind of the chunks at ``rows``
        (a new filtered field, or a field's new kind, needs its index made before the points). Read from those
        chunks only, not the corpus's columns (a pass over every document: 2.2 s at a million). What a removal
        takes away leaves an index a rebuild would not make, which changes no answer."""
        wanted = indexes_of(chunks, rows)
        with self.engine_errors("reading the payload indexes"):
            indexed = self.store.payload_indexes(name)
        return all(indexed.get(key) == kind for key, kind in wanted)

    # -- what the tree searches: the base, and the delta where there is one --------------------------
    def collections(self) -> list[str]:
        delta = self._segments.delta if self._segments is not None else None
        return [self.name] + ([delta] if delta is not None else [])

    def _update(self, change: CorpusChange) -> None:
        super()._update(change)
        self._replaced_collections = self.collections()

    def _release_replaced(self) -> None:
        """Drop the collections the tree searched before the update that it no longer searches (published by
        now): an old delta, or after a compaction the old base too."""
        old, self._replaced_collections, self._replaced = self._replaced_collections, [], None
        keep = set(self.collections())
        for name in old:
            if name not in keep and self.collection_exists(name):
                with self.engine_errors("dropping the replaced collection"):
                    self.store.drop(name)

    def reference_extra(self) -> dict[str, Any]:
        extra = super().reference_extra()
        return extra if self._segments is None else {**extra, "segments": self._segments.model_dump(mode="json")}

    def load_from(self, folder: Path, identity: IndexIdentity) -> None:
        reference = load_json(folder / REFERENCE_FILE)
        raw = reference.get("segments") if isinstance(reference, dict) else None
        try:
            self._segments = None if raw is None else Segments.model_validate(raw)
        except ValidationError as exc:
            raise PersistenceError(f"{folder / REFERENCE_FILE}: its segments are not readable "
                                   f"({exc.errors()[0]['msg']} at {exc.errors()[0]['loc']})") from None
        super().load_from(folder, identity)

    def check_object(self, wanted: dict[str, Any], identity: IndexIdentity) -> None:
        """The base's record is its own (``segments.base_record``) once updated, and the delta's names the tree's;
        the base's point count is checked when a search first needs the base (:meth:`_verify_base`), so that an
        update, which never opens the base, does not open it to count it (1.2-1.7 s at a million points)."""
        segments = self._segments
        base = wanted if segments is None else segments.base_record
        self.check_recorded(base, identity)
        if segments is not None and segments.delta is not None:
            record = delta_record(self.name, wanted, len(segments.delta_ids))
            with self.engine_errors("checking the delta collection"):
                found = self.store.read_record(segments.delta) if self.store.exists(segments.delta) else None
                count = self.store.count(segments.delta) if found == record else None
            if found != record or count != record["count"]:
                raise EngineError(f"{self.engine_name} {self.object_kind} {segments.delta!r} at "
                                  f"{self.display_location()} (the delta of {self.name!r}) does not hold what the "
                                  f"saved tree searches ({describe_difference(found, record)}; {count} points); "
                                  "rebuild with --overwrite")
        self._base_count_due = int(base["count"])

    def _verify_base(self) -> None:
        due = self._base_count_due
        if due is not None:
            self.check_count(due)
            self._base_count_due = None

    def _segment_vectors(self, ids: list[int]) -> np.ndarray:
        """The stored vectors of these chunks, from the delta for the ids it holds, else from the base."""
        in_delta = set(self._segments.delta_ids) if self._segments is not None else set()
        found: dict[int, list[float]] = {}
        from_base = [i for i in ids if i not in in_delta]
        if from_base:
            self._verify_base()
            found.update(self.store.vectors(self.name, from_base))
        if len(from_base) < len(ids):
            assert self._segments is not None and self._segments.delta is not None
            found.update(self.store.vectors(self._segments.delta, [i for i in ids if i in in_delta]))
        missing = [i for i in ids if i not in found]
        if missing:
            raise self.missing_points(missing)
        return np.asarray([found[i] for i in ids], dtype=np.float32).reshape(len(ids), -1)

    def holds_filter_payload(self) -> bool:
        """Whether the base's points carry ``filterable`` (a delta's always do: it is written by this version)."""
        if self._filterable is None:
            self._verify_base()
            in_delta = np.asarray(self._segments.delta_ids if self._segments is not None else (), dtype=np.int64)
            ids = self.require_infra().chunks.ids[self.shard_rows()]
            base_ids = ids[~np.isin(ids, in_delta)]
            with self.engine_errors("reading a point's payload"):
                self._filterable = not len(base_ids) or PAYLOAD_KEY in self.store.payload(self.name, int(base_ids[0]))
        return self._filterable

    # -- search ------------------------------------------------------------------
    def search(self, query_vectors: np.ndarray, k: int, restriction: Restriction | None) -> list[Hits]:
        """The base's k best live points (its tombstones hidden inside Edge's search) and the delta's k best
        (searched exactly in this process: :class:`DeltaVectors`), merged by score (``merge_hits``): exact with
        respect to each segment."""
        p = self.params
        options = SearchOptions(exact=p.exact, hnsw_ef=p.hnsw_ef, rescore=p.rescore, oversampling=p.oversampling)
        chunks = self.require_infra().chunks
        segments = self._segments
        metric = self.require_record()["metric"]
        sign = -1.0 if metric in ("euclidean", "manhattan") else 1.0
        self._verify_base()
        where = self._filter(restriction)
        with self.engine_errors("searching"):
            answers = self.store.search_dense(self.name, query_vectors, k, where, options,
                                              hidden=segments.tombstones if segments is not None else ())
        answers = [[(i, sign * s) for i, s in found] for found in answers]
        delta = self._delta_vectors()
        if delta is not None:
            allowed = None if restriction is None \
                else restriction.row_mask(chunks)[chunks.rows_of(delta.ids.tolist())]
            more = delta.search(query_vectors, k, metric, allowed)
            answers = [merge_hits(found, extra, k) for found, extra in zip(answers, more)]
        return [(chunks.rows_of([i for i, _ in found]), np.asarray([s for _, s in found], dtype=np.float32))
                for found in answers]

    def _delta_vectors(self) -> DeltaVectors | None:
        """The delta's vectors for the segments the tree searches now, read from the delta collection the first
        time a search needs them (a load does not; an update names new segments, so a new read)."""
        segments = self._segments
        if segments is None or segments.delta is None:
            return None
        held = self._delta_held
        if held is None or held.segments is not segments:
            ids = list(segments.delta_ids)
            with self.engine_errors("reading the delta's vectors"):
                found = self.store.vectors(segments.delta, ids)
            missing = [i for i in ids if i not in found]
            if missing:
                raise self.missing_points(missing)
            matrix = np.asarray([found[i] for i in ids], dtype=np.float32).reshape(len(ids), -1)
            held = self._delta_held = DeltaVectors.of(segments, matrix)
        return held

    def vectors_for(self, rows: np.ndarray) -> np.ndarray:
        ids = self.require_infra().chunks.ids[np.asarray(rows, dtype=np.int64)].tolist()
        if not ids:  # a cascade stage asked to re-score nothing (a filter no chunk matches)
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self.engine_errors("reading vectors"):
            return self._segment_vectors(ids)


def indexes_of(chunks: ChunkSet, rows: np.ndarray) -> tuple[PayloadIndex, ...]:
    """The payload indexes the chunks at ``rows`` are filtered through: read from those chunks alone, not the
    corpus's metadata columns (a pass over every document: 2.2 s at a million)."""
    from dashrag.filters.columns import MetadataColumns

    return filter_payload_indexes(MetadataColumns([chunk.all_metadata for chunk in chunks.chunks_at(rows.tolist())]))
