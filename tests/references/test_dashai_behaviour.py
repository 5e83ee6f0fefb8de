"""DashAI's configs rank as DashAI ranks: each behaviour against DashAI's own formulas, re-derived here from
its code (DashAI/back/models/RAG/retrievers/, the commits in tests/references/dashai/), with scikit-learn
where DashAI uses it, on examples/corpus in 200-character chunks (DashAI's CharacterChunkModel).

- BM25: DashAI's idf ``log((N - df + .5) / (df + .5) + 1) + delta``, Robertson's tf part, and the ranking
  by ``pairwise_distances`` between the query's term counts and the weighted chunk rows;
- TF-IDF: scikit-learn's TfidfVectorizer with DashAI's settings, ranked the same way;
- ParallelRetriever.score_chunks: the mean of the children's distances; ``interleave``: each child's list in turn;
- the cross-encoder: ``1 - sigmoid(logit)`` from a model read without activation, over the child's own top_k;
- DashAI's validation rules, and the schema and the validator agreeing on integers and on aliases.

Ties: DashAI orders by ``np.argsort`` (not stable); these queries have no tie inside their top-k (checked),
so the order is DashAI's whatever its sort does with ties.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from scipy.special import expit
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.metrics.pairwise import pairwise_distances

import dashrag
from dashrag.errors import ConfigError
from tests.conftest import EXAMPLE_CORPUS

REFERENCES = Path(__file__).with_name("dashai")
# DashAI's test chunker (CharacterChunkModel) at 200 characters: enough chunks for a top-10 in eight documents
CHUNKER = {"component": "CharacterChunker", "params": {"chunk_size": 200, "chunk_overlap": 20}}
QUERIES = ["how are documents ranked for a query", "vector search with embeddings and an index",
           "BM25 term frequency saturation and document length"]


def dashai_config(name: str, key: str) -> dict:
    return json.loads((REFERENCES / f"{name}.json").read_text(encoding="utf-8"))["configs"][key]


def bm25_config(**params) -> dict:
    config = dashai_config("bm25_retriever", "BM25Retriever")
    config["params"].update(params)
    return config


@pytest.fixture(scope="module")
def corpus():
    return dashrag.Corpus.from_folder(EXAMPLE_CORPUS)


def built(config: dict, corpus, folder: Path):
    return dashrag.build(config, corpus, folder, chunker=CHUNKER)


def texts_and_ids(tree) -> tuple[list[str], np.ndarray]:
    chunks = tree.require_infra().chunks
    return list(chunks.texts), np.array([c.id for c in chunks.chunks])


# -- DashAI's formulas, re-derived ---------------------------------------------------------------------------

def dashai_bm25(texts: list[str], k1: float, b: float, delta: float) -> tuple[CountVectorizer, sp.csr_matrix]:
    """BM25Retriever._fit: counts by CountVectorizer (its BM25VectorizerModel placeholders), then per entry
    ``idf * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))`` with ``idf = log((N-df+.5)/(df+.5) + 1) + delta``."""
    vectorizer = CountVectorizer(strip_accents=None, lowercase=True, stop_words=None, max_df=1.0, min_df=0.0,
                                 max_features=None)
    tf = vectorizer.fit_transform(texts).tocsr().astype(np.float64)
    n_docs = tf.shape[0]
    lengths = np.asarray(tf.sum(axis=1)).ravel()
    df = np.asarray((tf > 0).sum(axis=0)).ravel()
    idf = np.log((n_docs - df + 0.5) / (df + 0.5) + 1.0) + delta
    idf[idf < 0] = 0
    rows = np.repeat(np.arange(n_docs), np.diff(tf.indptr))
    norm = 1 - b + b * lengths[rows] / lengths.mean()
    weights = idf[tf.indices] * tf.data * (k1 + 1) / (tf.data + k1 * norm)
    return vectorizer, sp.csr_matrix((weights, tf.indices, tf.indptr), shape=tf.shape)


def dashai_tfidf(texts: list[str]) -> TfidfVectorizer:
    """TFIDFVectorizerModel with its placeholders ("None" is None; stop_words [] is none)."""
    return TfidfVectorizer(strip_accents=None, lowercase=True, analyzer="word", stop_words=None, ngram_range=(1, 1),
                           max_df=1.0, min_df=0.0, max_features=1000, norm="l2", use_idf=True, smooth_idf=True,
                           sublinear_tf=False).fit(texts)


def dashai_top(distances: np.ndarray, ids: np.ndarray, k: int) -> list[int]:
    order = np.argsort(distances, kind="stable")
    assert distances[order[k - 1]] < distances[order[k]], "a tie at the cut: DashAI's unstable sort could differ"
    assert len(set(np.round(distances[order[:k]], 9))) == k, "a tie inside the top-k"
    return [int(i) for i in ids[order[:k]]]


def bm25_distances(texts, config, query, metric) -> np.ndarray:
    p = config["params"]
    vectorizer, weights = dashai_bm25(texts, p["k1"], p["b"], p["delta"])
    return pairwise_distances(vectorizer.transform([query]), weights, metric=metric).ravel()


# -- BM25 --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("metric", ["cosine", "euclidean", "manhattan", "l1"])
def test_dashai_bm25_returns_dashais_top_10(corpus, tmp_path, metric):
    config = bm25_config(similarity_function=metric, top_k=10)
    tree = built(config, corpus, tmp_path)
    texts, ids = texts_and_ids(tree)
    assert len(texts) > 20
    for query in QUERIES:
        expected = dashai_top(bm25_distances(texts, config, query, metric), ids, 10)
        chunks, _ = tree.retrieve(query)
        assert [c.id for c in chunks] == expected, (metric, query)


def test_dashai_bm25_with_delta_k1_and_b_of_dashais_own_test(corpus, tmp_path):
    """test_encoding_bm25_custom_hyperparams: k1 2.0, b 0.5, delta 0.5 (added to the idf), euclidean, top_k 7."""
    config = dashai_config("test_RAG_component_api_configs", "test_encoding_bm25_custom_hyperparams")
    tree = built(config, corpus, tmp_path)
    texts, ids = texts_and_ids(tree)
    for query in QUERIES:
        distances = bm25_distances(texts, config, query, "euclidean")
        chunks, _ = tree.retrieve(query)
        assert [c.id for c in chunks] == dashai_top(distances, ids, 7)


def test_dashai_bm25_score_chunks_gives_dashais_distances(corpus, tmp_path):
    config = bm25_config(similarity_function="cosine", delta=0.25)
    tree = built(config, corpus, tmp_path)
    texts, ids = texts_and_ids(tree)
    distances = bm25_distances(texts, config, QUERIES[0], "cosine")
    asked = [int(i) for i in ids[::3]]
    by_id = dict(zip(ids.tolist(), distances))
    scored = tree.score_chunks(asked, QUERIES[0])
    np.testing.assert_allclose([d for _, d in scored], [by_id[c] for c, _ in scored], rtol=1e-5, atol=1e-6)
    assert [d for _, d in scored] == sorted(d for _, d in scored)


def test_a_config_naming_a_dashai_distance_and_no_variant_gets_dashais_weights():
    assert dashrag.validate_and_transform(bm25_config())["params"]["variant"] == "dashai"
    assert dashrag.validate_and_transform(
        {"component": "BM25Retriever", "params": {"similarity_function": "bm25"}})["params"]["variant"] == "okapi"


# -- TF-IDF ------------------------------------------------------------------------------------------------

def test_dashai_tfidf_under_manhattan_returns_dashais_top_15(corpus, tmp_path):
    config = dashai_config("test_RAG_component_api_configs", "test_encoding_tfidf_custom")  # manhattan, top_k 15
    tree = built(config, corpus, tmp_path)
    texts, ids = texts_and_ids(tree)
    vectorizer = dashai_tfidf(texts)
    for query in QUERIES:
        distances = pairwise_distances(vectorizer.transform([query]), vectorizer.transform(texts),
                                       metric="manhattan").ravel()
        chunks, _ = tree.retrieve(query)
        assert [c.id for c in chunks] == dashai_top(distances, ids, 15)


# -- ParallelRetriever ---------------------------------------------------------------------------------------

def test_parallel_score_chunks_is_the_mean_of_dashais_child_distances(corpus, tmp_path):
    bm25 = bm25_config(similarity_function="cosine", top_k=6)
    tfidf = dashai_config("tfidf_retriever", "TFIDFRetriever")
    tree = built({"component": "ParallelRetriever", "params": {"merge_strategy": "round_robin",
                                                              "children": [bm25, tfidf]}}, corpus, tmp_path)
    texts, ids = texts_and_ids(tree)
    query = QUERIES[1]
    vectorizer = dashai_tfidf(texts)
    child_distances = [bm25_distances(texts, bm25, query, "cosine"),
                       pairwise_distances(vectorizer.transform([query]), vectorizer.transform(texts),
                                          metric="cosine").ravel()]
    mean = dict(zip(ids.tolist(), (child_distances[0] + child_distances[1]) / 2))
    asked = [int(i) for i in ids[:12]]
    scored = tree.score_chunks(asked, query)
    assert sorted(c for c, _ in scored) == sorted(asked)
    np.testing.assert_allclose([d for _, d in scored], [mean[c] for c, _ in scored], rtol=1e-5, atol=1e-6)


def test_interleave_is_each_childs_list_in_turn(corpus, tmp_path):
    first, second = bm25_config(top_k=4), bm25_config(similarity_function="euclidean", top_k=4)
    tree = built({"component": "ParallelRetriever", "params": {"merge_strategy": "interleave",
                                                              "children": [first, second]}}, corpus, tmp_path)
    chunks, trace = tree.retrieve(QUERIES[2])
    lists = [[c["chunk_id"] for c in node["output"]] for node in trace["children"]]
    expected = list(dict.fromkeys(lists[0] + lists[1]))  # DashAI's _merge_interleave: concatenate, skip repeats
    assert [c.id for c in chunks] == expected and len(expected) <= 8


# -- the cross-encoder ---------------------------------------------------------------------------------------

@pytest.fixture
def cross_encoder_tree(cross_encoder_dir, corpus, tmp_path):
    config = {"component": "SentenceTransformerCrossEncoderRetriever", "params": {
        "model_name": str(cross_encoder_dir), "top_k": 3, "children": [bm25_config(top_k=7)]}}
    return built(config, corpus, tmp_path)


def test_a_cross_encoder_rescores_the_childs_own_top_k(cross_encoder_tree):
    chunks, trace = cross_encoder_tree.retrieve(QUERIES[0])
    assert len(chunks) == 3 and trace["selection"]["candidates"] == 7


def test_cross_encoder_score_chunks_is_one_minus_the_sigmoid_of_the_logit(cross_encoder_tree, cross_encoder_dir):
    import torch
    from sentence_transformers import CrossEncoder

    texts, ids = texts_and_ids(cross_encoder_tree)
    asked = [int(i) for i in ids[:6]]
    model = CrossEncoder(str(cross_encoder_dir), activation_fn=torch.nn.Identity())  # as DashAI loads it
    logits = model.predict([(QUERIES[0], texts[i]) for i in range(6)], show_progress_bar=False)
    expected = dict(zip(asked, 1.0 - expit(np.asarray(logits, dtype=np.float64))))
    scored = cross_encoder_tree.score_chunks(asked, QUERIES[0])
    np.testing.assert_allclose([d for _, d in scored], [expected[c] for c, _ in scored], rtol=1e-5, atol=1e-6)


# -- DashAI's rules, at validation -----------------------------------------------------------------------------

def test_a_sequential_cascade_whose_top_k_does_not_decrease_is_refused_at_validation():
    with pytest.raises(ConfigError, match=r"children\[1\]\.params\.top_k \(5\) is not smaller"):
        dashrag.validate_and_transform({"component": "SequentialRetriever", "params": {
            "children": [bm25_config(top_k=5), bm25_config(top_k=5)]}})


def test_a_parallel_retriever_needs_two_children():
    with pytest.raises(ConfigError, match="at least 2"):
        dashrag.validate_and_transform({"component": "ParallelRetriever", "params": {"children": [bm25_config()]}})


def test_min_df_above_max_df_is_refused_at_validation():
    config = bm25_config()
    config["params"]["BM25Vectorizer"]["params"].update(min_df=0.6, max_df=0.4)
    with pytest.raises(ConfigError) as info:
        dashrag.validate_and_transform(config)
    assert [i.path for i in info.value.issues] == ["params.BM25Vectorizer.params.min_df"]


@pytest.mark.parametrize(("device", "accepted"), [("cpu", True), ("cuda", True), ("CPU", True), ("cuda:1", True),
                                                  ("gpu", False), ("", False)])
def test_device_values_are_checked_at_validation(device, accepted):
    config = dashai_config("test_RAG_pipeline_api_configs", "test_publication_1_medical_fitness")
    config["params"]["embedding_model"]["params"]["device"] = device
    if accepted:
        dashrag.validate_and_transform(config)
    else:
        with pytest.raises(ConfigError, match="device"):
            dashrag.validate_and_transform(config)


# -- the published schemas accept what the validator accepts ---------------------------------------------------

@pytest.fixture(scope="module")
def tree_validator() -> Draft202012Validator:
    from dashrag.core.registry import all_components
    from dashrag.core.schema import component_schema, node_schema

    schemas = [component_schema(cls) for _, cls in all_components()]
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)
    root = {"$id": "https://dashrag.dev/schemas/tree.json", **node_schema("retriever"),
            "$defs": {"retriever_node": node_schema("retriever")}}
    return Draft202012Validator(root, registry=registry)


def every_reference_config():
    for path in sorted(REFERENCES.glob("*.json")):
        for key, config in json.loads(path.read_text(encoding="utf-8"))["configs"].items():
            yield pytest.param(config, id=f"{path.stem}:{key}")


@pytest.mark.parametrize("config", every_reference_config())
def test_the_schemas_accept_every_dashai_config_the_validator_accepts(tree_validator, config):
    schema_ok = not list(tree_validator.iter_errors(config))
    try:
        dashrag.validate_and_transform(config)
        validator_ok = True
    except ConfigError as exc:  # a missing model is no schema matter; an empty composite is both's refusal
        validator_ok = "is not on this machine" in str(exc)
    assert schema_ok == validator_ok


def test_a_field_under_both_names_is_refused_by_the_schema_and_the_validator(tree_validator):
    config = bm25_config()
    config["params"]["vectorizer"] = copy.deepcopy(config["params"]["BM25Vectorizer"])
    assert list(tree_validator.iter_errors(config))
    with pytest.raises(ConfigError, match="name the same parameter"):
        dashrag.validate_and_transform(config)


@pytest.mark.parametrize(("top_k", "accepted"), [(5, True), (5.0, True), (5.5, False), (True, False)])
def test_an_integer_field_reads_a_whole_float_the_same_in_schema_and_validator(tree_validator, top_k, accepted):
    config = bm25_config(top_k=top_k)
    assert (not list(tree_validator.iter_errors(config))) is accepted
    if accepted:
        assert dashrag.validate_and_transform(config)["params"]["top_k"] == 5
    else:
        with pytest.raises(ConfigError, match="top_k"):
            dashrag.validate_and_transform(config)
