"""TFIDFRetriever on a real SciFact subset, checked against scikit-learn's TfidfVectorizer + cosine."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

import dashrag
from dashrag.errors import UnknownChunkError

QUERIES = ["vitamin D deficiency and fractures", "tumour suppressor p53 mutation in cancer cells",
           "cerebral white matter diffusion in newborns", "insulin resistance obesity"]


def tfidf_config(top_k: int = 5, vectorizer: dict | None = None, **params) -> dict:
    return {"component": "TFIDFRetriever", "params": {
        "top_k": top_k, **params, "vectorizer": {"component": "BagOfWordsConverter", "params": vectorizer or {}}}}


# (retriever params, BagOfWordsConverter params, the same as TfidfVectorizer arguments)
VARIANTS = {
    "defaults": ({}, {}, {}),
    "sublinear_unsmoothed": ({"sublinear_tf": True, "smooth_idf": False}, {},
                             {"sublinear_tf": True, "smooth_idf": False}),
    "stop_words_bigrams": ({}, {"stop_words": "english", "ngram_max": 2},
                           {"stop_words": "english", "ngram_range": (1, 2)}),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("tfidf")


@pytest.fixture(scope="module")
def tfidf(scifact_subset_file, workdir):
    return dashrag.build(tfidf_config(), scifact_subset_file, workdir)


def sklearn_cosines(retriever, queries: list[str], **vectorizer_args) -> np.ndarray:
    """(queries, chunks) cosine similarities of scikit-learn's TF-IDF over the retriever's chunk texts."""
    vectorizer = TfidfVectorizer(**vectorizer_args)
    matrix = vectorizer.fit_transform(retriever.require_infra().chunks.texts)
    return (vectorizer.transform(queries) @ matrix.T).toarray()


def test_builds_from_json_and_gives_back_its_config(tfidf):
    config = tfidf.to_config()
    assert config["params"]["top_k"] == 5 and config["params"]["sublinear_tf"] is False
    assert config["params"]["smooth_idf"] is True
    assert config["params"]["vectorizer"]["component"] == "BagOfWordsConverter"
    assert dashrag.build_component(config).to_config() == config


@pytest.mark.parametrize("variant", VARIANTS)
def test_results_equal_scikit_learns_tfidf_cosine(variant, scifact_subset_file, workdir):
    params, vectorizer, sklearn_args = VARIANTS[variant]
    retriever = dashrag.build(tfidf_config(top_k=10, vectorizer=vectorizer, **params), scifact_subset_file, workdir)
    expected = sklearn_cosines(retriever, QUERIES, **sklearn_args)
    ids = retriever.require_infra().chunks.ids
    for row, (chunks, _) in zip(expected, retriever.retrieve_batch(QUERIES)):
        order = np.lexsort((np.arange(len(row)), -row))[:10]
        assert [c.id for c in chunks] == ids[order].tolist()
        np.testing.assert_allclose([c.score for c in chunks], row[order], atol=1e-6)


def test_score_chunks_gives_one_minus_cosine_for_every_chunk_ascending(tfidf):
    ids = tfidf.require_infra().chunks.ids.tolist()
    cosine = dict(zip(ids, sklearn_cosines(tfidf, [QUERIES[0]])[0]))
    scored = tfidf.score_chunks(ids, QUERIES[0])
    distances = [d for _, d in scored]
    assert distances == sorted(distances) and sorted(cid for cid, _ in scored) == ids
    np.testing.assert_allclose(distances, [1.0 - cosine[cid] for cid, _ in scored], atol=1e-6)


def test_score_chunks_matches_retrieve(tfidf):
    chunks, _ = tfidf.retrieve(QUERIES[1])
    ranked = tfidf.score_chunks([c.id for c in reversed(chunks)], QUERIES[1])
    assert [cid for cid, _ in ranked] == [c.id for c in chunks]
    np.testing.assert_allclose([1.0 - d for _, d in ranked], [c.score for c in chunks], atol=1e-6)


def test_score_chunks_refuses_unknown_ids(tfidf):
    with pytest.raises(UnknownChunkError):
        tfidf.score_chunks([10**9], QUERIES[0])


def test_only_chunks_sharing_a_query_term_are_returned(tfidf):
    chunks, _ = tfidf.retrieve("zzzzqqq white", top_k=50)
    assert chunks and all(re.search(r"\bwhite\b", c.chunk.text.lower()) for c in chunks)
    assert tfidf.retrieve("zzzzqqq")[0] == []


def test_restriction_applies_before_top_k(tfidf):
    full, _ = tfidf.retrieve(QUERIES[0], top_k=60)
    assert len(full) == 60
    allowed = {c.document_id for c in full[20:]} - {c.document_id for c in full[:5]}
    restricted, _ = tfidf.retrieve(QUERIES[0], restriction=dashrag.Restriction.to_documents(allowed))
    assert len(restricted) == 5 and {c.document_id for c in restricted} <= allowed
    assert [c.id for c in restricted] == [c.id for c in full if c.document_id in allowed][:5]


def test_top_k_hint_overrides_the_configured_k(tfidf):
    chunks, _ = tfidf.retrieve(QUERIES[2], top_k=12)
    assert len(chunks) == 12 and chunks[:5] == tfidf.retrieve(QUERIES[2])[0]


def test_batch_equals_one_query_at_a_time(tfidf):
    batched = tfidf.retrieve_batch(QUERIES)
    assert len(batched) == len(QUERIES)
    for query, (chunks, trace) in zip(QUERIES, batched):
        assert chunks == tfidf.retrieve(query)[0]
        assert trace["query"] == query and trace["batched"] is True


def test_trace_lists_the_output(tfidf):
    chunks, trace = tfidf.retrieve(QUERIES[3])
    assert trace["component"] == "TFIDFRetriever" and trace["children"] == []
    assert trace["params"] == {"top_k": 5, "sublinear_tf": False, "smooth_idf": True, "norm": "l2", "use_idf": True,
                               "similarity_function": "cosine"}
    assert [(o["chunk_id"], o["score"]) for o in trace["output"]] == [(c.id, c.score) for c in chunks]


def test_save_and_load_answer_identically(tfidf, tmp_path):
    loaded = dashrag.load(tfidf.save(tmp_path / "saved"))
    assert loaded.to_config() == tfidf.to_config()
    assert [c for c, _ in loaded.retrieve_batch(QUERIES)] == [c for c, _ in tfidf.retrieve_batch(QUERIES)]
    ids = tfidf.require_infra().chunks.ids.tolist()
    assert loaded.score_chunks(ids, QUERIES[0]) == tfidf.score_chunks(ids, QUERIES[0])
