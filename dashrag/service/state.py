"""What one running service holds: its settings, collections, pipeline and build jobs.

Every client of a dependency outside the process (the rewrite endpoint or LLM, the reranker,
the TEI embedding server, Qdrant) is made here and closed by :meth:`Service.close` when the
app shuts down, so a stopped service leaves no connection open.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from dashrag.service.build_process import WorkerLimits
from dashrag.service.collections import CollectionRegistry
from dashrag.service.jobs import BuildJobs
from dashrag.service.pipeline import RetrievePipeline, Thresholds
from dashrag.service.qdrant_collections import QdrantServer, QueryEmbedding, embedding_from_config, qdrant_collections
from dashrag.service.redaction import ServerLocations
from dashrag.service.rerank import reranker_from_settings
from dashrag.service.rewrite import rewriter_from_settings
from dashrag.service.settings import ServiceSettings
from dashrag.service.tei_embed import TeiQueryEmbedder


@dataclass
class Service:
    settings: ServiceSettings
    registry: CollectionRegistry
    pipeline: RetrievePipeline
    jobs: BuildJobs
    executor: ThreadPoolExecutor
    components: list[dict[str, Any]]
    qdrant: QdrantServer | None = None
    query_embedding: QueryEmbedding | None = None
    locations: ServerLocations = ServerLocations(())  # hidden from error bodies (docs/security.md)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)  # component_schema by name, made once

    def component_schema(self, name: str) -> dict[str, Any]:
        """A registered component's JSON Schema, made on the first request for it and kept: the page asks for
        every component's on each load (34 schemas, about 60 ms of the server's CPU to make), and a schema is
        fixed for the life of the process, as the registry read into :attr:`components` is."""
        from dashrag.core.registry import get_component
        from dashrag.core.schema import component_schema

        if name not in self.schemas:
            self.schemas[name] = component_schema(get_component(name))  # UnknownComponentError: nothing kept
        return self.schemas[name]

    def component_schemas(self) -> dict[str, dict[str, Any]]:
        """Every registered component's JSON Schema by name: what the page reads on each load, in one answer."""
        return {component["name"]: self.component_schema(component["name"]) for component in self.components}

    def close(self) -> None:
        self.jobs.shutdown()
        self.executor.shutdown(wait=False, cancel_futures=True)
        for client in (self.pipeline.rewriter, self.pipeline.reranker, self.query_embedding, self.qdrant):
            close = getattr(client, "close", None)
            if close is not None:
                close()
        self.registry.close()


def build_service(settings: ServiceSettings) -> Service:
    from dashrag.core.registry import all_components
    from dashrag.core.schema import frontend_meta

    registry = CollectionRegistry(settings.trees_dir, stores=settings.tree_stores)
    registry.load_all()
    embedding = query_embedding(settings) if settings.qdrant else None
    qdrant = serve_qdrant(settings, registry, embedding) if embedding is not None else None
    executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="dashrag-search")
    s = settings
    pipeline = RetrievePipeline(
        registry, Thresholds(s.retrieval_score_floor, s.confidence_threshold, s.budgets()),
        rewriter_from_settings(s),
        reranker_from_settings(s.reranker, s.reranker_url, s.reranker_api_key_var, s.reranker_timeout_sec), executor)
    components = [{"name": name, **frontend_meta(cls)} for name, cls in all_components()]
    jobs = BuildJobs(registry, s.build_workers, s.cache_dir, max_pending=s.max_pending_builds,
                     max_upload_bytes=s.max_queued_upload_bytes,
                     limits=WorkerLimits(memory_mb=s.build_memory_mb, timeout_s=s.build_timeout_sec))
    return Service(settings, registry, pipeline, jobs, executor, components, qdrant, embedding,
                   ServerLocations.of(settings))


def query_embedding(settings: ServiceSettings) -> QueryEmbedding:
    """What embeds the Qdrant collections' queries: the TEI server of ``RAG_EMBED_URL``, else ``qdrant_embedding``."""
    if settings.embed_url is not None:
        return TeiQueryEmbedder(settings.embed_url, settings.embedding_timeout_sec)
    return embedding_from_config(settings.qdrant_embedding)


def serve_qdrant(settings: ServiceSettings, registry: CollectionRegistry, embedding: QueryEmbedding) -> QdrantServer:
    """Register the configured Qdrant's collections beside the trees (a saved tree of the same name wins)."""
    import os

    key = (os.environ.get(settings.qdrant_api_key_var) if settings.qdrant_api_key_var else None) or None  # "": none
    server, collections = qdrant_collections(str(settings.qdrant), embedding, key,
                                             settings.qdrant_collections)
    for collection in collections:
        if registry.get(collection.name) is None:
            registry.add(collection)
    return server


def service_of(request: Request) -> Service:
    return request.app.state.service
