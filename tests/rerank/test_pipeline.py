"""RerankPipeline (dashrag/rerank/pipeline.py) as the rag-reranker's reference prints it: the steps in order, the
early exit keeping stage-1 scores, MMR by the chunks' own embeddings or the embedder, and every failure a
RerankerError naming its stage. The backends are real (NoopReranker, CohereReranker against a loopback server);
SPI subclasses written here are what a user writes to add a backend."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import dashrag
from dashrag.errors import ConfigError, RerankerError, RetrievalError
from dashrag.rerank import Chunk, ChunkRef, MemoryHydrator, MMRConfig, RequestContext, Reranker, RerankPipeline
from dashrag.rerank.backends import CohereReranker, NoopReranker
from tests.retrievers.rerank_server import word_overlap
from tests.retrievers.rerank_services import CohereServer

CTX = RequestContext("tenant-a")
QUERY = "rank fusion of keyword lists"
TEXTS = ["rank fusion", "keyword lists", "dense vectors", "rank fusion of keyword lists merges", "lists"]


def chunks(embeddings=None) -> list[Chunk]:
    return [Chunk(f"c{i}", t, 0.5 - i / 10, {} if embeddings is None else {"embedding": embeddings[i]})
            for i, t in enumerate(TEXTS)]


def refs() -> list[ChunkRef]:
    return [ChunkRef(f"c{i}", 0.5 - i / 10) for i in range(len(TEXTS))]


class ByLength(Reranker):
    """A backend written against the SPI: shorter texts are more relevant; records what each step saw."""

    def __init__(self, exit_early=False):
        self.exit_early, self.seen = exit_early, {}

    async def fast_rerank(self, ctx, query, candidates, top_n):
        self.seen["fast"] = [c.id for c in candidates]
        return list(reversed(candidates))[:top_n]

    def should_early_exit(self, stage1_scores):
        self.seen["early_exit"] = list(stage1_scores)
        return self.exit_early

    async def precise_rerank(self, ctx, query, chunks, top_n):
        self.seen["precise"] = [c.id for c in chunks]
        for c in chunks:
            c.score = 1.0 / len(c.text)
        return sorted(chunks, key=lambda c: -c.score)[:top_n]


def run(pipeline, top_k=10, given=None):
    return asyncio.run(pipeline.rerank(CTX, QUERY, refs() if given is None else given, top_k=top_k))


def test_the_steps_run_in_order_stage1_narrowing_before_hydration():
    reranker = ByLength()
    hydrated = []

    async def hydrator(ctx, some):
        hydrated.append([r.id for r in some])
        return await MemoryHydrator(chunks())(ctx, some)

    out = run(RerankPipeline(reranker=reranker, hydrator=hydrator, stage1_top_n=3, stage2_top_n=2))
    assert reranker.seen["fast"] == ["c0", "c1", "c2", "c3", "c4"]
    assert hydrated == [["c4", "c3", "c2"]] and reranker.seen["precise"] == ["c4", "c3", "c2"]
    assert [c.id for c in out] == ["c4", "c2"] and out[0].score == pytest.approx(1 / len(TEXTS[4]))


def test_the_default_fast_rerank_truncates_without_rescoring():
    out = run(RerankPipeline(reranker=NoopReranker(), hydrator=MemoryHydrator(chunks()), stage1_top_n=2))
    assert [c.id for c in out] == ["c0", "c1"]


def test_an_early_exit_hydrates_the_top_k_refs_and_keeps_their_stage1_scores():
    reranker = ByLength(exit_early=True)
    out = run(RerankPipeline(reranker=reranker, hydrator=MemoryHydrator(chunks())), top_k=2)
    assert [(c.id, c.score) for c in out] == [("c4", pytest.approx(0.1)), ("c3", pytest.approx(0.2))]
    assert "precise" not in reranker.seen and reranker.seen["early_exit"] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])


def test_the_defaults_are_the_references():
    pipeline = RerankPipeline(reranker=NoopReranker(), hydrator=MemoryHydrator(chunks()))
    assert (pipeline.stage1_top_n, pipeline.stage2_top_n, pipeline.mmr, pipeline.embedder) == (50, 20, None, None)
    assert (MMRConfig().lambda_, MMRConfig().top_k) == (0.7, 10)


def test_mmr_uses_the_chunks_own_embeddings():
    near = [[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.98, 0.2], [0.5, 0.5]]
    pipeline = RerankPipeline(reranker=NoopReranker(), hydrator=MemoryHydrator(chunks(near)),
                              mmr=MMRConfig(lambda_=0.3, top_k=2))
    assert [c.id for c in run(pipeline)] == ["c0", "c2"]  # all score 1.0: the first, then the least similar


def test_mmr_embeds_with_the_embedder_when_chunks_lack_embeddings():
    class Axes:
        def embed_documents(self, texts):
            return np.array([[1.0, 0.0] if "rank" in t else [0.0, 1.0] for t in texts])

    pipeline = RerankPipeline(reranker=NoopReranker(), hydrator=MemoryHydrator(chunks()), embedder=Axes(),
                              mmr=MMRConfig(lambda_=0.5, top_k=2))
    assert [c.id for c in run(pipeline)] == ["c0", "c1"]


def test_mmr_without_embeddings_is_a_reranker_error_at_stage_mmr():
    pipeline = RerankPipeline(reranker=NoopReranker(), hydrator=MemoryHydrator(chunks()), mmr=MMRConfig())
    with pytest.raises(RerankerError, match="metadata\\['embedding'\\]") as caught:
        run(pipeline)
    assert caught.value.stage == caught.value.context["stage"] == "mmr"


def test_mmr_does_not_run_over_one_candidate():
    pipeline = RerankPipeline(reranker=NoopReranker(), hydrator=MemoryHydrator(chunks()), mmr=MMRConfig(),
                              stage1_top_n=1)
    assert [c.id for c in run(pipeline)] == ["c0"]  # no embeddings, yet no error: MMR did not run


class Failing(Reranker):
    def __init__(self, where):
        self.where = where

    async def fast_rerank(self, ctx, query, candidates, top_n):
        if self.where == "fast":
            raise RuntimeError("fast broke")
        return list(candidates)

    def should_early_exit(self, stage1_scores):
        if self.where == "early_exit":
            raise RuntimeError("rule broke")
        return False

    async def precise_rerank(self, ctx, query, chunks, top_n):
        raise RuntimeError("model broke")


@pytest.mark.parametrize("where", ["fast", "early_exit", "precise"])
def test_a_failing_step_is_a_reranker_error_naming_its_stage(where):
    with pytest.raises(RerankerError) as caught:
        run(RerankPipeline(reranker=Failing(where), hydrator=MemoryHydrator(chunks())))
    assert caught.value.stage == caught.value.context["stage"] == where
    assert isinstance(caught.value, RetrievalError)


def test_a_failing_hydrator_is_a_reranker_error_at_stage_hydrate():
    with pytest.raises(RerankerError, match="no chunk with id 'nope'") as caught:
        run(RerankPipeline(reranker=NoopReranker(), hydrator=MemoryHydrator(chunks())), given=[ChunkRef("nope")])
    assert caught.value.stage == "hydrate"


def test_a_reranker_must_implement_precise_rerank():
    class Nothing(Reranker):
        pass

    with pytest.raises(TypeError, match="precise_rerank"):
        Nothing()


def test_bad_arguments_are_config_errors_naming_them():
    with pytest.raises(ConfigError, match="reranker"):
        RerankPipeline(reranker="noop", hydrator=MemoryHydrator(chunks()))
    with pytest.raises(ConfigError, match="stage2_top_n"):
        RerankPipeline(reranker=NoopReranker(), hydrator=MemoryHydrator(chunks()), stage2_top_n=0)
    with pytest.raises(ConfigError, match="mmr.lambda_"):
        MMRConfig(lambda_=1.5)


def test_rerank_sync_is_rerank_without_an_event_loop():
    pipeline = RerankPipeline(reranker=ByLength(), hydrator=MemoryHydrator(chunks()))
    assert [c.id for c in pipeline.rerank_sync(CTX, QUERY, refs(), top_k=3)] == [c.id for c in run(pipeline, 3)]


def test_a_hosted_backend_reranks_through_the_pipeline(monkeypatch):
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    with CohereServer() as server:
        pipeline = RerankPipeline(reranker=CohereReranker(api_key="co-key", api_base=server.url),
                                  hydrator=MemoryHydrator(chunks()))
        out = run(pipeline, top_k=3)
    expected = sorted(range(len(TEXTS)), key=lambda i: (-word_overlap(QUERY, TEXTS[i]), i))[:3]
    assert [c.id for c in out] == [f"c{i}" for i in expected]
    assert [c.score for c in out] == pytest.approx([word_overlap(QUERY, TEXTS[i]) for i in expected])


def test_the_names_are_exported_from_dashrag():
    assert (dashrag.RerankPipeline, dashrag.MMRConfig) == (RerankPipeline, MMRConfig)
    assert dashrag.mmr_rerank is dashrag.rerank.mmr_rerank
