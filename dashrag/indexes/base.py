"""The vector-index contract: where a dense node keeps its chunk vectors and how it searches them.

A ``DenseEmbeddingRetriever`` embeds the chunks and the queries; *where* the chunk
vectors live and how the nearest ones are found is its nested ``index`` component
(kind ``vector_index``). The same JSON tree runs in-process (``InMemoryVectorIndex``,
the default) or on an engine (``QdrantVectorIndex``, ``PgVectorIndex``) by changing
that one nested component.

The contract is four calls, driven by the dense node (the index has no fitting of
its own, so ``init_model`` / ``save_state`` of the index node itself do nothing):

* ``add(vectors, identity)``: hold the chunk vectors (rows in chunk-id order);
* ``search(query_vectors, k, restriction)``: per query, the rows and scores of the
  k best allowed chunks, best first, scores higher-is-better in the node's metric,
  the restriction applied *inside* the search (never after top-k);
* ``vectors_for(rows)``: stored vectors of some chunks (MMR, ``score_chunks``);
* ``save_into(folder)`` / ``load_from(folder, identity)``: write and read what the
  saved folder holds: the vectors themselves in-process, only a *reference* on an engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams

if TYPE_CHECKING:  # the filter language and the update path: imported where they are used
    from dashrag.core.restriction import Restriction
    from dashrag.documents.changes import CorpusChange

P = TypeVar("P", bound=ComponentParams)
Hits = tuple[np.ndarray, np.ndarray]  # rows (int64) and scores (float32), best first


@dataclass(frozen=True)
class IndexIdentity:
    """What the vectors an index holds are: the corpus, the model and the metric they serve.

    An engine stores this beside the vectors and a saved tree records it, so loading
    can tell that a collection or table still holds what the tree was built with.
    """

    corpus_fingerprint: str
    embedding_key: str
    metric: str
    dimension: int

    def to_json(self) -> dict[str, Any]:
        return {"corpus_fingerprint": self.corpus_fingerprint, "embedding_key": self.embedding_key,
                "metric": self.metric, "dimension": self.dimension}


class VectorIndex(ConfigObject[P], Generic[P]):
    """Base of the ``vector_index`` components; see the module docstring for the contract."""

    def add(self, vectors: np.ndarray, identity: IndexIdentity) -> None:
        raise NotImplementedError

    def search(self, query_vectors: np.ndarray, k: int, restriction: Restriction | None) -> list[Hits]:
        raise NotImplementedError

    def vectors_for(self, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def kept_vectors(self, change: CorpusChange) -> np.ndarray:
        """The vectors of the chunks ``change`` keeps, in order, read while the index still holds the old
        corpus's (docs/updating.md); rows of the old corpus here, by chunk id on an engine."""
        return self.vectors_for(change.kept_rows)

    def update_vectors(self, change: CorpusChange, added: np.ndarray, identity: IndexIdentity) -> None:
        """Hold the changed corpus's vectors: the kept chunks' as they are, then ``added`` (one row per chunk
        of ``change.added``), under the new corpus's ``identity``. Here every vector is added again (the kept
        ones read back); an index that can change a copy of what it holds (Qdrant Edge) does only the change."""
        self.add(np.concatenate([np.asarray(self.kept_vectors(change), dtype=np.float32), added]), identity)

    @property
    def dimension(self) -> int:
        raise NotImplementedError

    def save_into(self, folder: Path) -> None:
        raise NotImplementedError

    def load_from(self, folder: Path, identity: IndexIdentity) -> None:
        raise NotImplementedError
