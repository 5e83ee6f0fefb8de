"""DenseEmbeddingRetriever on a real SciFact subset, and the pure scoring/selection functions it uses."""

from __future__ import annotations

import numpy as np
import pytest

import dashrag
from dashrag.documents.corpus import Corpus
from dashrag.errors import ConfigError, UnknownChunkError
from dashrag.retrievers.dense import (
    euclidean_from_ranking,
    euclidean_ranking,
    similarity,
    squared_lengths,
)
from tests.fixtures.scifact import dense_config

METRICS = ["cosine", "dot", "euclidean"]


# -- pure functions ------------------------------------------------------------------
def reference(queries: np.ndarray, matrix: np.ndarray, metric: str) -> np.ndarray:
    q, m = queries.astype(np.float64), matrix.astype(np.float64)
    if metric == "dot":
        return q @ m.T
    if metric == "cosine":
        return (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (m / np.linalg.norm(m, axis=1, keepdims=True)).T
    return -np.linalg.norm(q[:, None, :] - m[None, :, :], axis=2)


@pytest.mark.parametrize("metric", METRICS)
def test_similarity_equals_the_numpy_definition(metric):
    rng = np.random.default_rng(7)
    queries, matrix = rng.normal(size=(4, 16)).astype(np.float32), rng.normal(size=(30, 16)).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    np.testing.assert_allclose(similarity(queries, matrix, norms, metric, False), reference(queries, matrix, metric),
                               rtol=1e-4, atol=1e-4)


def test_cosine_on_unit_vectors_is_the_plain_product():
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(20, 8)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = rng.normal(size=(2, 8)).astype(np.float32)
    unit_query = (query / np.linalg.norm(query, axis=1, keepdims=True)).astype(np.float32)
    np.testing.assert_array_equal(
        similarity(query, matrix, np.ones(20, np.float32), "cosine", True), unit_query @ matrix.T
    )


def test_euclidean_ranking_orders_rows_like_the_distance():
    rng = np.random.default_rng(5)
    queries, matrix = rng.normal(size=(3, 8)).astype(np.float32), rng.normal(size=(50, 8)).astype(np.float32)
    ranking = euclidean_ranking(queries, matrix, np.linalg.norm(matrix, axis=1))
    distance = -reference(queries, matrix, "euclidean")
    for r, d in zip(ranking, distance):
        np.testing.assert_array_equal(np.argsort(-r, kind="stable"), np.argsort(d, kind="stable"))
    np.testing.assert_allclose(euclidean_from_ranking(ranking, squared_lengths(queries)), -distance, atol=1e-4)


# -- the component on SciFact -------------------------------------------------------------
@pytest.fixture(scope="module")
def cosine(subset, shared_workdir, run_cache):
    return dashrag.build(dense_config("cosine"), subset.corpus, shared_workdir, cache_dir=run_cache)


@pytest.fixture(scope="module")
def queries(subset) -> list[str]:
    return list(subset.queries.values())[:8]


def all_vectors(retriever) -> np.ndarray:
    return retriever.vectors_for(retriever.require_infra().chunks.ids)


@pytest.mark.slow
def test_builds_from_json_and_gives_back_its_config(cosine):
    config = cosine.to_config()
    assert config["params"]["embedding"] == {
        "component": "MiniLMEmbedding",
        "params": {
            "batch_size": 32,
            "device": "cpu",
            "normalize": True,
            "max_seq_length": 128,
            "overflow_strategy": "truncate",
        },
    }
    assert dashrag.build_component(config).to_config() == config


@pytest.mark.slow
def test_the_relevant_abstract_ranks_first_for_most_queries(cosine, subset):
    """A sanity floor on real data (not a quality claim): MiniLM finds the judged abstract at rank 1 mostly."""
    ids = list(subset.queries)
    answers = cosine.retrieve_batch([subset.queries[q] for q in ids])
    hits = [chunks[0].document_id in subset.qrels[q] for q, (chunks, _) in zip(ids, answers)]
    assert np.mean(hits) > 0.5


@pytest.mark.slow
def test_results_are_the_numpy_top_k_of_the_stored_vectors(cosine, queries):
    matrix, query_vectors = all_vectors(cosine), cosine.embedding.embed_queries(queries)
    expected = reference(query_vectors, matrix, "cosine")
    chunk_ids = cosine.require_infra().chunks.ids
    for row, (chunks, _) in zip(expected, cosine.retrieve_batch(queries)):
        assert [c.id for c in chunks] == chunk_ids[np.lexsort((np.arange(len(row)), -row))[:10]].tolist()
        np.testing.assert_allclose([c.score for c in chunks], np.sort(row)[::-1][:10], atol=1e-5)


@pytest.mark.slow
def test_vectors_from_a_normalising_model_are_used_as_they_are(cosine):
    assert cosine.unit_length
    np.testing.assert_allclose(np.linalg.norm(all_vectors(cosine), axis=1), 1, atol=1e-5)


@pytest.mark.slow
def test_a_batch_answers_like_single_queries(cosine, queries):
    for query, (batched, _) in zip(queries[:4], cosine.retrieve_batch(queries[:4])):
        single, _ = cosine.retrieve(query)
        assert [c.id for c in single] == [c.id for c in batched]
        np.testing.assert_allclose([c.score for c in single], [c.score for c in batched], atol=1e-5)


@pytest.mark.slow
def test_restriction_applies_before_top_k(cosine, queries):
    chunks = cosine.require_infra().chunks
    unrestricted, _ = cosine.retrieve(queries[0], top_k=len(chunks))
    low_documents = list(dict.fromkeys(c.document_id for c in reversed(unrestricted)))[:6]
    allowed_chunks = [c for c in unrestricted if c.document_id in low_documents]
    restricted, _ = cosine.retrieve(queries[0], top_k=5, restriction=dashrag.Restriction.to_documents(low_documents))
    assert [c.id for c in restricted] == [c.id for c in allowed_chunks[:5]]
    assert len(restricted) == min(5, len(allowed_chunks))


@pytest.mark.slow
def test_top_k_hint_overrides_the_configured_k(cosine, queries):
    assert len(cosine.retrieve(queries[0], top_k=3)[0]) == 3


@pytest.mark.slow
def test_score_chunks_gives_ascending_cosine_distances(cosine, queries):
    returned, _ = cosine.retrieve(queries[0])
    ids = [c.id for c in reversed(returned)]
    scored = cosine.score_chunks(ids, queries[0])
    assert [i for i, _ in scored] == [c.id for c in returned]
    np.testing.assert_allclose([d for _, d in scored], [1 - c.score for c in returned], atol=1e-5)


@pytest.mark.slow
def test_score_chunks_refuses_unknown_ids(cosine, queries):
    with pytest.raises(UnknownChunkError, match="999999"):
        cosine.score_chunks([999999], queries[0])


@pytest.mark.slow
def test_trace_lists_the_output(cosine, queries):
    chunks, trace = cosine.retrieve(queries[0])
    assert trace["component"] == "DenseEmbeddingRetriever" and trace["children"] == []
    assert [o["chunk_id"] for o in trace["output"]] == [c.id for c in chunks]


@pytest.mark.slow
def test_save_and_load_answer_identically_without_embedding_documents(cosine, queries, tmp_path):
    """The loaded node embeds queries with its saved ONNX export (docs/dense.md), torch's vectors within 1e-4:
    the same chunks in the same order, scores equal to float32 rounding."""
    cosine.save(tmp_path / "saved")
    loaded = dashrag.load(tmp_path / "saved")
    before, after = cosine.retrieve_batch(queries), loaded.retrieve_batch(queries)
    assert [[c.id for c in chunks] for chunks, _ in before] == [[c.id for c in chunks] for chunks, _ in after]
    np.testing.assert_allclose([[c.score for c in chunks] for chunks, _ in after],
                               [[c.score for c in chunks] for chunks, _ in before], atol=1e-5)
    assert loaded.embedding.query_encoder is not None and loaded.embedding.documents_embedded == 0
    assert not (tmp_path / "saved" / "embeddings").exists()


@pytest.mark.slow
def test_load_memory_maps_the_vectors(cosine, tmp_path):
    cosine.save(tmp_path / "saved")
    vectors = dashrag.load(tmp_path / "saved").vectors
    base = vectors
    while base is not None and not isinstance(base, np.memmap):
        base = base.base
    assert isinstance(base, np.memmap)


@pytest.mark.slow
def test_a_bad_model_path_fails_the_build_clearly_before_anything_is_written(subset, tmp_path):
    config = dense_config(
        embedding={"component": "SentenceTransformerEmbedding", "params": {"model": str(tmp_path / "no-model")}}
    )
    with pytest.raises(ConfigError, match=r"params\.embedding\.params: model .*no-model.* is not a directory"):
        dashrag.build(config, Corpus(subset.corpus.documents[:3]), tmp_path / "work")
    assert not (tmp_path / "work").exists()  # refused at validation: no store, no cache


def test_an_unknown_metric_is_a_config_error():
    with pytest.raises(ConfigError, match="similarity_metric"):
        dashrag.build_component(dense_config("hamming"))


# -- metrics and the cache, on a smaller corpus and a model that does not normalise ------------------
@pytest.fixture(scope="module")
def raw_model(unnormalised_minilm_dir) -> dict:
    return {
        "component": "SentenceTransformerEmbedding",
        "params": {"model": str(unnormalised_minilm_dir), "normalize": False, "max_seq_length": 64},
    }


@pytest.fixture(scope="module")
def small_corpus(subset) -> Corpus:
    return Corpus(subset.corpus.documents[:40])


@pytest.fixture(scope="module")
def by_metric(raw_model, small_corpus, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("dense-metrics")
    return {m: dashrag.build(dense_config(m, embedding=raw_model), small_corpus, workdir) for m in METRICS}


@pytest.mark.slow
@pytest.mark.parametrize("metric", METRICS)
def test_each_metric_scores_like_numpy_on_raw_vectors(by_metric, queries, metric):
    retriever = by_metric[metric]
    assert not retriever.unit_length
    matrix, query_vectors = all_vectors(retriever), retriever.embedding.embed_queries(queries[:3])
    expected = reference(query_vectors, matrix, metric)
    for row, (chunks, _) in zip(expected, retriever.retrieve_batch(queries[:3])):
        np.testing.assert_allclose([c.score for c in chunks], np.sort(row)[::-1][:10], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize(
    "metric,distance", [("cosine", lambda s: 1 - s), ("dot", lambda s: -s), ("euclidean", lambda s: -s)]
)
@pytest.mark.slow
def test_each_metric_has_its_distance(by_metric, queries, metric, distance):
    retriever = by_metric[metric]
    returned, _ = retriever.retrieve(queries[0])
    scored = dict(retriever.score_chunks([c.id for c in returned], queries[0]))
    np.testing.assert_allclose([scored[c.id] for c in returned], [distance(c.score) for c in returned], atol=1e-4)


@pytest.mark.slow
def test_metrics_share_one_embedding_of_the_corpus(by_metric):
    embedded = [r.embedding.documents_embedded for r in by_metric.values()]
    assert sorted(embedded) == [0, 0, len(by_metric["cosine"].require_infra().chunks)]


@pytest.mark.slow
def test_two_dense_nodes_in_one_tree_embed_once(raw_model, small_corpus, tmp_path):
    tree = {
        "component": "ParallelRetriever",
        "params": {"children": [dense_config("cosine", embedding=raw_model), dense_config("dot", embedding=raw_model)]},
    }
    root = dashrag.build(tree, small_corpus, tmp_path)
    counts = [child.embedding.documents_embedded for child in root.get_children()]
    assert sorted(counts) == [0, len(root.require_infra().chunks)]
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 1
