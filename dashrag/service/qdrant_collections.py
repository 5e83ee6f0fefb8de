"""Qdrant collections served directly, as the reference service does, next to saved trees.

``dashrag serve --qdrant URL_OR_PATH --qdrant-embedding '<component JSON>'`` serves every
collection of a Qdrant server (or of an embedded storage folder) whose points carry the
reference payload: ``chunk_id``, ``text``, ``source_id``. A query is embedded by the
configured embedding component, or by a Text Embeddings Inference server when
``RAG_EMBED_URL`` is set (service/tei_embed.py; either way the model that embedded the
points: the collection's vector size must be the model's) and answered by ``query_points``. The
collection's layout is read on its first search (so a server that is down when the
service starts is a 503 until it answers). dashrag's own bookkeeping collection
(``dashrag_records``) is never served, and a saved tree of the same name wins (it is
registered first).

retrieval_score: Qdrant's cosine (or dot product, meant for normalised embeddings) is a
cosine already: clipped to [0, 1] like a cosine tree's; a Euclid or Manhattan distance
``d`` becomes ``1 / (1 + d)``.

Every engine failure (unreachable server, refused key, a collection dropped or
re-created with another dimension) is an :class:`EngineError` naming Qdrant and the
collection: the pipeline answers it 503 (``search: collection 'x': Qdrant collection
'x' at URL: ...``), with no secret and no stack trace.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence

import numpy as np

from dashrag.core.factory import build_component
from dashrag.core.restriction import Restriction
from dashrag.embeddings.base import EmbeddingModel
from dashrag.errors import ConfigError, DashragError, EngineError, FilterError
from dashrag.indexes.qdrant_client_store import RECORDS_COLLECTION, connect_qdrant
from dashrag.indexes.qdrant_edge_store import EDGE_FOLDER
from dashrag.indexes.qdrant_engine import describe_qdrant_error, strip_secrets
from dashrag.service.calibration import clip_cosine
from dashrag.service.collections import RetrievedChunk

COSINE_LIKE = {"Cosine", "Dot"}


class QueryEmbedding(Protocol):
    """What a collection needs of its embedding: an embedding component or :class:`TeiQueryEmbedder`."""

    @property
    def component_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


class QdrantServer:
    """One client for the configured Qdrant (server URL or embedded folder), shared by its collections."""

    def __init__(self, location: str, api_key: str | None, timeout_s: int = 10):
        self.location = location
        self.display = strip_secrets(location) if location.startswith(("http://", "https://")) \
            else f"embedded storage {location}"
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                with self.errors("the server", "connect"):
                    self._client = connect_qdrant(self.location, self._api_key, self._timeout_s)
            return self._client

    @contextmanager
    def errors(self, what: str, action: str) -> Iterator[None]:
        try:
            yield
        except DashragError:
            raise
        except Exception as exc:  # HTTP, connection and local-mode errors of the client
            raise EngineError(f"Qdrant {what} at {self.display}: {action} failed: "
                              f"{describe_qdrant_error(exc)}") from None

    def collection_names(self) -> list[str]:
        with self.errors("server", "listing collections"):
            names = [c.name for c in self.client.get_collections().collections]
        return sorted(n for n in names if n != RECORDS_COLLECTION)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


class QdrantCollection:
    """A Qdrant collection with the reference payload, searched by the configured embedding model."""

    def __init__(self, server: QdrantServer, name: str, embedding: QueryEmbedding):
        self.server = server
        self.name = name
        self.embedding = embedding
        self._layout: tuple[str | None, str] | None = None

    @property
    def layout(self) -> tuple[str | None, str]:
        """(vector name, distance), read from the collection on first use and kept once it fits."""
        if self._layout is None:
            self._layout = self._vector_layout()
        return self._layout

    def _where(self) -> str:
        return f"collection {self.name!r}"

    def _vector_layout(self) -> tuple[str | None, str]:
        """The vector the points are searched by (the unnamed one, or the only named one) and its distance;
        an EngineError when its size is not the embedding model's."""
        with self.server.errors(self._where(), "reading the collection's configuration"):
            vectors = self.server.client.get_collection(self.name).config.params.vectors
        if isinstance(vectors, dict):
            if len(vectors) != 1:
                raise EngineError(f"Qdrant {self._where()} at {self.server.display} has {len(vectors)} named vectors "
                                  f"({sorted(vectors)}); the service searches collections with one vector")
            name, params = next(iter(vectors.items()))
        else:
            name, params = None, vectors
        size = self.embedding.dimension
        if int(params.size) != size:
            raise EngineError(f"Qdrant {self._where()} at {self.server.display} holds {params.size}-dimensional "
                              f"vectors, the embedding {self.embedding.component_name} gives {size}")
        return name, str(getattr(params.distance, "value", params.distance))

    def exists(self) -> bool:
        """False once the collection is gone; True when the server cannot say (the search then reports it)."""
        try:
            return bool(self.server.client.collection_exists(self.name))
        except Exception:  # an unreachable server is the search's 503, not a 404
            return True

    def score(self, native: float) -> float:
        return clip_cosine(native) if self.layout[1] in COSINE_LIKE else 1.0 / (1.0 + max(0.0, native))

    def search(self, query: str, limit: int, restriction: Restriction | None = None) -> list[RetrievedChunk]:
        if restriction is not None:
            raise FilterError("$", f"collection {self.name!r} is a Qdrant collection of the reference layout, not a "
                                   "dashrag tree: its points carry no metadata to filter")
        vector_name = self.layout[0]
        vector = self.embedding.embed_queries([query])[0].tolist()
        with self.server.errors(self._where(), "searching"):
            answer = self.server.client.query_points(self.name, query=vector, using=vector_name, limit=limit,
                                                     with_payload=["chunk_id", "text", "source_id", "metadata"])
        found: list[RetrievedChunk] = []
        for point in answer.points:
            payload = point.payload or {}
            if not isinstance(payload.get("text"), str):
                raise EngineError(f"Qdrant {self._where()} at {self.server.display}: point {point.id} has no "
                                  "'text' in its payload (the service needs chunk_id, text, source_id)")
            source, metadata = payload.get("source_id"), payload.get("metadata")
            found.append(RetrievedChunk(chunk_id=str(payload.get("chunk_id", point.id)), text=payload["text"],
                                        source_id=None if source is None else str(source),
                                        collection_name=self.name, retrieval_score=self.score(float(point.score)),
                                        metadata=metadata if isinstance(metadata, dict) else {}))
        return found


def embedding_from_config(config: dict[str, Any] | None) -> EmbeddingModel:
    """``qdrant_embedding``'s component (default MiniLMEmbedding), or a ConfigError when it embeds nothing."""
    embedding = build_component(config or {"component": "MiniLMEmbedding"}, "embedding")
    if not isinstance(embedding, EmbeddingModel):
        raise ConfigError(f"qdrant_embedding: {embedding.component_name} is not an embedding model")
    return embedding


def qdrant_collections(location: str, embedding: QueryEmbedding, api_key: str | None,
                       names: list[str] | None = None) -> tuple[QdrantServer, list[QdrantCollection]]:
    """The configured Qdrant's collections (``names``, or every one, listed now: an EngineError when the
    server cannot be reached, so a service told to serve "every collection" does not start without them)."""
    if (Path(location) / EDGE_FOLDER).is_dir() and not (Path(location) / "meta.json").exists():
        raise ConfigError(f"qdrant: {location} holds Qdrant Edge collections (a dashrag tree's embedded storage); "
                          "serve them through their saved tree (--trees), or a Qdrant server by its URL")
    server = QdrantServer(location, api_key)
    wanted = names if names else server.collection_names()
    return server, [QdrantCollection(server, name, embedding) for name in wanted]
