"""The embedding contract every embedding component implements.

An embedding component turns texts into one float32 row each. Documents and
queries are separate calls because some models embed them differently (e5 puts
``query: `` / ``passage: `` in front). ``cache_key()`` names *what the vectors
are* — the model's files and the params that change them, never the batch size
or the device — so a corpus is embedded once per model and every retriever
using that model reads the same cached matrix.
"""

from __future__ import annotations

from typing import Any, Generic, Sequence, TypeVar

import numpy as np

from dashrag.core.component import ConfigObject
from dashrag.core.digest import digest
from dashrag.core.params import ComponentParams
from dashrag.errors import ConfigError, QueryError, RetrievalError

P = TypeVar("P", bound=ComponentParams)

# Bump when the meaning of cached vectors changes for the same model and params
# (a fix in window averaging, say): old cache entries then stop matching.
VECTOR_FORMAT = 1

# Texts; up to this many (a query, say) an embedding runs on one thread: a one-sentence
# query is several times faster on one torch thread than on two (docs/architecture.md,
# "Decisions recorded here"), and one thread leaves the other cores to a sibling
# retriever. Larger batches use every core.
SMALL_INPUT = 8


class ModelUnavailableError(ConfigError):
    """A configured model's files cannot be found or loaded; the message says how to provide them.

    A ConfigError because the fix is in the config (point ``model`` at a local
    directory); it surfaces when the tree is fitted or first queried, since
    validation never touches the file system.
    """


def check_texts(texts: Sequence[str], what: str) -> list[str]:
    """A list of strings, or a QueryError naming the first item that is not one."""
    if isinstance(texts, str):
        raise QueryError(f"{what}: expected a list of texts, got a single string")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise QueryError(f"{what}[{i}]: expected a string, got {type(text).__name__}")
    return items


class EmbeddingModel(ConfigObject[P], Generic[P]):
    """Base of the ``embedding`` components.

    Subclasses implement ``_embed(texts, is_query)``, ``dimension`` and
    ``identity()``. The base checks inputs and output shapes, and counts what it
    embedded (``documents_embedded`` / ``queries_embedded``), which is how a test
    sees that a load or a cache hit did not call the model.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.documents_embedded = 0
        self.queries_embedded = 0
        self._cache_key: str | None = None

    # -- contract -------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dimension) float32 rows for the texts to be searched."""
        items = check_texts(texts, "documents")
        vectors = self._checked(self._embed(items, is_query=False) if items else self._empty(), len(items))
        self.documents_embedded += len(items)
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dimension) float32 rows for search queries."""
        items = check_texts(texts, "queries")
        vectors = self._checked(self._embed(items, is_query=True) if items else self._empty(), len(items))
        self.queries_embedded += len(items)
        return vectors

    def prepare(self) -> None:
        """Load what embedding needs (a model: seconds to a minute) now rather than inside the first batch, so a
        build can say that a model is loading before it counts chunks (``DenseEmbeddingRetriever._fit``).
        Default: nothing to load."""

    @property
    def dimension(self) -> int:
        raise NotImplementedError

    @property
    def batch_size(self) -> int:
        return int(getattr(self.params, "batch_size", 32))

    def identity(self) -> dict[str, Any]:
        """JSON-ready: the model's files and every param that changes the vectors."""
        raise NotImplementedError

    def cache_key(self) -> str:
        """sha256 of ``identity()``: equal keys mean equal vectors for the same texts."""
        if self._cache_key is None:
            self._cache_key = digest({"vector_format": VECTOR_FORMAT, **self.identity()})
        return self._cache_key

    # -- for subclasses -------------------------------------------------------
    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        raise NotImplementedError

    def _empty(self) -> np.ndarray:
        return np.empty((0, self.dimension), dtype=np.float32)

    def _checked(self, vectors: Any, count: int) -> np.ndarray:
        array = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        if array.ndim != 2 or array.shape[0] != count:
            raise RetrievalError(f"{self.component_name} returned shape {array.shape} for {count} texts")
        return array
