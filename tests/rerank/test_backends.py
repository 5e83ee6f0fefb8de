"""The rag-reranker backends (dashrag/rerank/backends.py): the cross-encoder on MODELS.md's offline model, the
reference's named models refused with how to get them, and the hosted services against loopback servers
speaking Cohere's and Jina's protocols (tests/retrievers/rerank_services.py)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from dashrag.errors import ConfigError, CredentialError
from dashrag.rerank import Chunk, RequestContext
from dashrag.rerank.backends import (
    CohereReranker,
    JinaReranker,
    NoopReranker,
    SentenceTransformersCrossEncoder,
    backend_named,
    bge_reranker_v2_m3,
    minilm_l6,
)
from tests.retrievers.rerank_server import word_overlap
from tests.retrievers.rerank_services import CohereServer, JinaServer

CTX = RequestContext()
QUERY = "rank fusion of keyword lists"
TEXTS = ["rank fusion", "keyword lists", "dense vectors", "rank fusion of keyword lists merges"]


def chunks() -> list[Chunk]:
    return [Chunk(i, t) for i, t in enumerate(TEXTS)]


def precise(reranker, top_n=10) -> list[Chunk]:
    return asyncio.run(reranker.precise_rerank(CTX, QUERY, chunks(), top_n))


def test_noop_keeps_the_order_and_scores_every_chunk_one():
    assert [(c.id, c.score) for c in precise(NoopReranker(), 3)] == [(0, 1.0), (1, 1.0), (2, 1.0)]


def test_the_cross_encoder_writes_the_models_sigmoid_scores_best_first(cross_encoder_dir):
    from sentence_transformers import CrossEncoder

    expected = CrossEncoder(str(cross_encoder_dir), device="cpu").predict([(QUERY, t) for t in TEXTS])
    out = precise(SentenceTransformersCrossEncoder(str(cross_encoder_dir)), 2)
    best = sorted(range(len(TEXTS)), key=lambda i: -expected[i])[:2]
    assert [c.id for c in out] == best
    assert [c.score for c in out] == pytest.approx([float(expected[i]) for i in best], abs=1e-5)


@pytest.mark.parametrize(("factory", "model"), [(bge_reranker_v2_m3, "BAAI/bge-reranker-v2-m3"),
                                                (minilm_l6, "cross-encoder/ms-marco-MiniLM-L-6-v2")])
def test_a_named_model_not_on_this_machine_says_which_and_how_to_get_it(factory, model, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache: the model is surely absent
    with pytest.raises(ConfigError, match=f"'{model}' is not on this machine.*huggingface-cli download"):
        factory()


@pytest.mark.parametrize(("backend", "server", "var"), [(CohereReranker, CohereServer, "COHERE_API_KEY"),
                                                        (JinaReranker, JinaServer, "JINA_API_KEY")])
def test_a_hosted_backend_sends_the_given_key_and_writes_the_services_scores(backend, server, var, monkeypatch):
    monkeypatch.delenv(var, raising=False)
    with server() as service:
        reranker = backend(api_key="secret-key", api_base=service.url)
        out = precise(reranker, 3)
    best = sorted(range(len(TEXTS)), key=lambda i: (-word_overlap(QUERY, TEXTS[i]), i))[:3]
    assert [c.id for c in out] == best
    assert [c.score for c in out] == pytest.approx([word_overlap(QUERY, TEXTS[i]) for i in best])
    assert {r["headers"]["Authorization"] for r in service.requests} == {"Bearer secret-key"}
    assert "secret-key" not in repr(reranker)


@pytest.mark.parametrize(("backend", "server", "var", "model"), [
    (CohereReranker, CohereServer, "COHERE_API_KEY", "rerank-v3.5"),
    (JinaReranker, JinaServer, "JINA_API_KEY", "jina-reranker-v2-base-multilingual")])
def test_without_api_key_the_services_variable_is_read(backend, server, var, model, monkeypatch):
    monkeypatch.setenv(var, "from-env")
    with server() as service:
        precise(backend(api_base=service.url))
    assert [(r["headers"]["Authorization"], r["body"]["model"]) for r in service.requests] == [("Bearer from-env",
                                                                                                 model)]


def test_a_hosted_backend_without_any_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    with CohereServer() as service, pytest.raises(CredentialError, match="COHERE_API_KEY"):
        precise(CohereReranker(api_base=service.url))
    assert service.requests == []


def test_backend_named_refuses_an_unknown_name_and_a_model_for_noop():
    with pytest.raises(ConfigError, match="not one of noop, sentence-transformers, cohere, jina"):
        backend_named("bm25")
    with pytest.raises(ConfigError, match="--model"):
        backend_named("noop", "some-model")
    assert np.isclose(precise(backend_named("noop"))[0].score, 1.0)
