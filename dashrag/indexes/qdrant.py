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

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field

from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.errors import EngineError
from dashrag.indexes.base import Hits, IndexIdentity, VectorIndex
from dashrag.indexes.engine import UPLOAD_BATCH, payloads_of
from dashrag.indexes.qdrant_engine import QdrantConnectionParams, QdrantEngine, filter_payload_indexes
from dashrag.indexes.qdrant_store import DenseLayout, Layout, SearchOptions

if TYPE_CHECKING:
    from dashrag.documents.changes import CorpusChange

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


@register(kind="vector_index", icon="Database", category="index",
          en=("Qdrant collection",
              "Chunk vectors in a Qdrant collection: embedded (Qdrant Edge, in this process), or a server or cluster."),
          es=("Colección de Qdrant",
              "Vectores de los fragmentos en una colección de Qdrant: embebida (Qdrant Edge, en este proceso), "
              "o un servidor o clúster."),
          representation="Qdrant {collection} exact={exact}")
class QdrantVectorIndex(QdrantEngine[QdrantParams], VectorIndex[QdrantParams]):
    def structure(self) -> dict[str, Any]:
        p = self.params
        built = {name: getattr(p, name) for name, default in QDRANT_DEFAULTS.items() if getattr(p, name) != default}
        if p.exact and self.store.graph_follows_exact:
            built["graph"] = False
        return built

    def layout(self, dimension: int, metric: str) -> Layout:
        p = self.params
        return Layout(dense=DenseLayout(size=dimension, distance=DISTANCES[metric], hnsw_m=p.hnsw_m,
                                        hnsw_ef_construct=p.hnsw_ef_construction, threshold_kb=p.hnsw_threshold_kb,
                                        quantization=p.quantization, graph=not p.exact),
                      payload_indexes=self.payload_indexes())

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

    def update_vectors(self, change: CorpusChange, added: np.ndarray, identity: IndexIdentity) -> None:
        """On Qdrant Edge, the new collection is a copy of the old one's files changed by what ``change`` names
        (its gone chunks' points deleted, its added chunks' points upserted), not every point uploaded again and
        the HNSW graph built anew: the old collection stays as it was for the tree that searches it until the
        update is published, as a rebuild leaves it (docs/scale.md, "Dense updates on Qdrant Edge"). A server,
        a configured collection name (the new collection would be the old one) and a change of the filtered
        fields (their payload indexes are made before the points) take the rebuild."""
        old = self.name
        target = self._choose_name(identity)
        if not (self.store.copies_collections and self.configured_name() is None and target != old
                and not self.collection_exists(target) and self._indexes_cover(old, change)):
            super().update_vectors(change, added, identity)
            return
        wanted = self.record_for(identity)
        chunks = change.new
        gone = np.ones(len(change.old), dtype=bool)
        gone[change.kept_rows] = False
        gone_ids = change.old.ids[gone]
        new_rows = np.arange(len(change.kept_rows), len(chunks), dtype=np.int64)
        mine = chunks.ids[new_rows] % self.params.shards == self.params.shard
        with self.engine_errors("changing a copy of the collection"), self.store.changed_copy(old, target) as partial:
            self.store.delete_points(partial, gone_ids[gone_ids % self.params.shards == self.params.shard].tolist())
            for start in range(0, int(mine.sum()), UPLOAD_BATCH * 8):
                part = new_rows[mine][start:start + UPLOAD_BATCH * 8]
                self.store.upsert_dense(partial, chunks.ids[part].tolist(), added[part - len(change.kept_rows)],
                                        payloads_of(chunks, part.tolist()))
            self.store.finish(partial)
            self.store.write_record(partial, wanted)
        self._name, self._record = target, wanted

    def _indexes_cover(self, name: str, change: CorpusChange) -> bool:
        """Whether collection ``name``'s payload indexes cover every field and kind of the chunks ``change`` adds
        (a new filtered field, or a field's new kind, needs its index made before the points). Read from the
        added chunks only, not the corpus's columns (a pass over every document: 2.2 s at a million). What a
        removal takes away leaves an index a rebuild would not make, which changes no answer."""
        from dashrag.filters.columns import MetadataColumns

        wanted = filter_payload_indexes(MetadataColumns([chunk.all_metadata for chunk in change.added]))
        with self.engine_errors("reading the payload indexes"):
            indexed = self.store.payload_indexes(name)
        return all(indexed.get(key) == kind for key, kind in wanted)

    # -- search ------------------------------------------------------------------
    def search(self, query_vectors: np.ndarray, k: int, restriction: Restriction | None) -> list[Hits]:
        p = self.params
        options = SearchOptions(exact=p.exact, hnsw_ef=p.hnsw_ef, rescore=p.rescore, oversampling=p.oversampling)
        chunks = self.require_infra().chunks
        with self.engine_errors("searching"):
            answers = self.store.search_dense(self.name, query_vectors, k, self._filter(restriction), options)
        sign = -1.0 if self._record and self._record["metric"] in ("euclidean", "manhattan") else 1.0
        return [(chunks.rows_of([i for i, _ in found]), np.asarray([sign * s for _, s in found], dtype=np.float32))
                for found in answers]

    def vectors_for(self, rows: np.ndarray) -> np.ndarray:
        ids = self.require_infra().chunks.ids[np.asarray(rows, dtype=np.int64)].tolist()
        with self.engine_errors("reading vectors"):
            found = self.store.vectors(self.name, ids)
        missing = [i for i in ids if i not in found]
        if missing:
            raise self.missing_points(missing)
        if not ids:  # a cascade stage asked to re-score nothing (a filter no chunk matches)
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.asarray([found[i] for i in ids], dtype=np.float32).reshape(len(ids), -1)
