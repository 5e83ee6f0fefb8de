"""``dashrag finetune reranker``: a cross-encoder folder that CrossEncoderRetriever and the cascade load by path."""

from __future__ import annotations

import pytest

import dashrag
from dashrag.finetuning.model_card import read_card
from tests.fixtures.finetuning import TINY, run_cli

pytestmark = pytest.mark.slow  # both tests read a cross-encoder fine-tuned by the real CLI


@pytest.fixture(scope="module")
def reranker(tiny_scifact, tmp_path_factory):
    folder = tmp_path_factory.mktemp("reranker") / "model"
    result = run_cli("finetune", "reranker", "--dataset", tiny_scifact, "--out", folder, "--negatives", "2",
                     "--workdir", tmp_path_factory.mktemp("work"), *TINY)
    assert result.exit_code == 0, result.output
    assert "its first stage" in result.stdout  # the verdict is printed
    return folder


def test_the_card_says_whether_the_reranker_beats_its_first_stage_on_dev(reranker):
    card = read_card(reranker)
    dev = card["figures"]["dev_rerank"]
    assert card["kind"] == "reranker" and card["data"]["splits_read"] == ["train"]
    assert dev["beats_first_stage"] == (dev["reranked"]["ndcg@10"] > dev["first_stage"]["ndcg@10"])
    fit_queries = card["data"]["trained_on"]["queries"]
    assert card["data"]["labelled_pairs"] == card["data"]["positives"] + 2 * fit_queries


def test_cross_encoder_retriever_and_the_cascade_load_it_by_path(reranker, tiny_scifact, tmp_path):
    corpus = dashrag.Corpus.from_beir(tiny_scifact)
    bm25 = {"component": "BM25Retriever", "params": {"top_k": 8}}
    cross = {"component": "CrossEncoderRetriever",
             "params": {"model": str(reranker), "children": [bm25], "fetch_k": 8, "top_k": 3, "max_length": 64}}
    cascade = {"component": "RerankCascadeRetriever",
               "params": {"fast": bm25, "stage1_top_n": 8, "top_k": 3,
                          "precise": {**cross, "params": {**cross["params"], "children": [bm25]}}}}
    query = "Vitamin D deficiency increases the risk of fractures."
    for config in (cross, cascade):
        tree = dashrag.build(config, corpus, tmp_path)
        try:
            chunks, trace = tree.retrieve(query)
        finally:
            tree.close()
        assert len(chunks) == 3 and trace
    scores = [c.score for c in dashrag.build(cross, corpus, tmp_path).retrieve(query)[0]]
    assert scores == sorted(scores, reverse=True)  # the model's own scores order the answer
