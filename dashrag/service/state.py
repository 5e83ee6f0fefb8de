"""What one running service holds: its settings, collections, pipeline and build jobs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fastapi import Request

from dashrag.service.build_process import WorkerLimits
from dashrag.service.collections import CollectionRegistry
from dashrag.service.jobs import BuildJobs
from dashrag.service.pipeline import RetrievePipeline, Thresholds
from dashrag.service.qdrant_collections import QdrantServer, qdrant_collections
from dashrag.service.redaction import ServerLocations
from dashrag.service.rerank import reranker_from_settings
from dashrag.service.rewrite import rewriter_from_settings
from dashrag.service.settings import ServiceSettings


@dataclass
class Service:
    settings: ServiceSettings
    registry: CollectionRegistry
    pipeline: RetrievePipeline
    jobs: BuildJobs
    executor: ThreadPoolExecutor
    components: list[dict[str, Any]]
    qdrant: QdrantServer | None = None
    locations: ServerLocations = ServerLocations(())  # hidden from error bodies (docs/security.md)

    def close(self) -> None:
        self.jobs.shutdown()
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self.qdrant is not None:
            self.qdrant.close()


def build_service(settings: ServiceSettings) -> Service:
    from dashrag.core.registry import all_components
    from dashrag.core.schema import frontend_meta

    registry = CollectionRegistry(settings.trees_dir)
    registry.load_all()
    qdrant = serve_qdrant(settings, registry) if settings.qdrant else None
    executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="dashrag-search")
    s = settings
    pipeline = RetrievePipeline(
        registry, Thresholds(s.retrieval_score_floor, s.confidence_threshold, s.budgets()),
        rewriter_from_settings(s.llm, s.llm_model, s.llm_api_base, s.llm_api_key_var, s.llm_timeout),
        reranker_from_settings(s.reranker, s.reranker_url, s.reranker_api_key_var, s.reranker_timeout), executor)
    components = [{"name": name, **frontend_meta(cls)} for name, cls in all_components()]
    jobs = BuildJobs(registry, s.build_workers, s.cache_dir, max_pending=s.max_pending_builds,
                     limits=WorkerLimits(memory_mb=s.build_memory_mb, timeout_s=s.build_timeout_s))
    return Service(settings, registry, pipeline, jobs, executor, components, qdrant, ServerLocations.of(settings))


def serve_qdrant(settings: ServiceSettings, registry: CollectionRegistry) -> QdrantServer:
    """Register the configured Qdrant's collections beside the trees (a saved tree of the same name wins)."""
    import os

    key = os.environ.get(settings.qdrant_api_key_var) if settings.qdrant_api_key_var else None
    server, collections = qdrant_collections(str(settings.qdrant), settings.qdrant_embedding, key,
                                             settings.qdrant_collections)
    for collection in collections:
        if registry.get(collection.name) is None:
            registry.add(collection)
    return server


def service_of(request: Request) -> Service:
    return request.app.state.service
