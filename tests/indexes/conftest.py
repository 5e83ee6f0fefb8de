"""Shared by the index tests: a SciFact subset embedded once (ONNX MiniLM), trees that differ only in their index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import dashrag
from dashrag.documents.corpus import Corpus
from dashrag.evaluation.metrics import evaluate
from dashrag.evaluation.runs import run_from_results
from tests.fixtures.scifact import Subset

FAST_ONNX = {"component": "MiniLMOnnxEmbedding", "params": {"max_seq_length": 128}}


def dense_tree(index: dict | None = None, top_k: int = 10, metric: str = "cosine") -> dict:
    params = {"top_k": top_k, "similarity_metric": metric, "embedding": FAST_ONNX}
    if index is not None:
        params["index"] = index
    return {"component": "DenseEmbeddingRetriever", "params": params}


def ranked_ids(retriever, queries: list[str], **kwargs) -> list[list[int]]:
    return [[c.id for c in chunks] for chunks, _ in retriever.retrieve_batch(queries, **kwargs)]


def assert_answers_like_in_process(engine_tree, in_process, subset: Subset) -> None:
    """The same ranking for every query of the subset, and the same scores (to 1e-5) for the first five."""
    queries = list(subset.queries.values())
    assert ranked_ids(engine_tree, queries) == ranked_ids(in_process, queries)
    ours = [c.score for chunks, _ in engine_tree.retrieve_batch(queries[:5]) for c in chunks]
    theirs = [c.score for chunks, _ in in_process.retrieve_batch(queries[:5]) for c in chunks]
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def ndcg_at_10(retriever, subset: Subset) -> float:
    ids = list(subset.queries)
    answers = retriever.retrieve_batch([subset.queries[q] for q in ids], top_k=10)
    run = run_from_results({q: chunks for q, (chunks, _) in zip(ids, answers)})
    return evaluate(subset.qrels, run, "ndcg@10").mean["ndcg@10"]


@pytest.fixture(scope="session")
def engine_subset(subset) -> Subset:
    return subset


@pytest.fixture(scope="session")
def engine_cache(run_cache) -> Path:
    """The index tests' embedding cache: the run's (``run_cache``), so the subset is embedded with ``FAST_ONNX``
    once per run, for these tests and the embeddings' alike."""
    return run_cache


@pytest.fixture(scope="session")
def in_process(engine_subset, engine_cache, tmp_path_factory):
    tree = dashrag.build(dense_tree(), engine_subset.corpus, tmp_path_factory.mktemp("in-process"),
                         cache_dir=engine_cache)
    yield tree
    tree.close()


def bm25_tree(index: dict | None = None, top_k: int = 10, **params) -> dict:
    params = {"top_k": top_k, **params}
    if index is not None:
        params["index"] = index
    return {"component": "BM25Retriever", "params": params}


@pytest.fixture(scope="session")
def bm25_in_process(engine_subset, tmp_path_factory):
    tree = dashrag.build(bm25_tree(), engine_subset.corpus, tmp_path_factory.mktemp("bm25-in-process"))
    yield tree
    tree.close()


@pytest.fixture(scope="module", params=["dense", "bm25"])
def engine_trees(request, engine_cache, pg_url, tmp_path_factory) -> Iterator[dict]:
    """The same top-5 leaf in process, on Qdrant (Edge, exact) and on PostgreSQL: dense or BM25, over the
    requesting module's ``ENGINE_CORPUS``. Dense on pgvector is exact when the module sets ``PGVECTOR_EXACT``
    (the restriction tests compare engines with each other), HNSW with the iterative scan otherwise (the
    filter property checks that a filtered HNSW search misses nothing)."""
    corpus = Corpus(tuple(request.module.ENGINE_CORPUS))
    folder = tmp_path_factory.mktemp(f"engine-trees-{request.param}")
    if request.param == "dense":
        pgvector = {"url": pg_url, **({"exact": True} if getattr(request.module, "PGVECTOR_EXACT", False) else {})}
        indexes = {"in-process": None,
                   "qdrant": {"component": "QdrantVectorIndex", "params": {"exact": True}},
                   "postgresql": {"component": "PgVectorIndex", "params": pgvector}}
        configs = {name: dense_tree(index, top_k=5) for name, index in indexes.items()}
    else:
        indexes = {"in-process": None, "qdrant": {"component": "QdrantKeywordIndex", "params": {}},
                   "postgresql": {"component": "PgKeywordIndex", "params": {"url": pg_url}}}
        configs = {name: bm25_tree(index, top_k=5) for name, index in indexes.items()}
    built = {name: dashrag.build(config, corpus, folder / name, cache_dir=engine_cache)
             for name, config in configs.items()}
    yield built
    for tree in built.values():
        tree.close()
