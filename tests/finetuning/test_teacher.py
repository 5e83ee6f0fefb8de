"""The hybrid teacher whose margins ``--corpus`` distils (``finetuning/teacher.py``): its BM25 and its margins."""

from __future__ import annotations

import numpy as np
import pytest

from dashrag.core.validation import validate_and_transform
from dashrag.embeddings.sentence_transformer import MiniLMEmbedding
from dashrag.finetuning.teacher import HybridTeacher, LexicalScorer
from dashrag.presets import load_preset

CORPUS = [
    "Vitamin D deficiency is common in patients with chronic kidney disease.",
    "Statins lower cholesterol and reduce the risk of heart attacks.",
    "The kidney filters blood; chronic disease reduces its filtration rate.",
    "Heart failure patients often take beta blockers and diuretics.",
    "Gut bacteria influence the immune response to infection.",
]


@pytest.fixture(scope="module")
def lexical() -> LexicalScorer:
    return LexicalScorer.fit(validate_and_transform(load_preset("keyword"), "retriever"), CORPUS)


def test_a_corpus_document_scores_the_same_as_a_pair_as_in_the_corpus_ranking(lexical):
    queries = ["chronic kidney disease", "heart attack risk", "immune infection"]
    matrix = lexical.score_matrix(queries)
    for i, query in enumerate(queries):
        pairs = lexical.pair_scores([query] * len(CORPUS), CORPUS)
        np.testing.assert_allclose(pairs, matrix[i], rtol=1e-5)
    assert int(np.argmax(matrix[0])) in (0, 2) and int(np.argmax(matrix[1])) == 1


def test_under_bm25plus_a_pair_also_counts_the_constant_of_the_querys_absent_terms():
    config = validate_and_transform(load_preset("keyword"), "retriever")
    config["params"].update(variant="bm25plus", delta=1.0)  # each absent query term adds idf x delta
    lexical = LexicalScorer.fit(config, CORPUS)
    queries = ["chronic kidney disease", "heart attack risk"]
    matrix = lexical.score_matrix(queries)
    for i, query in enumerate(queries):
        np.testing.assert_allclose(lexical.pair_scores([query] * len(CORPUS), CORPUS), matrix[i], rtol=1e-5)


def test_a_text_outside_the_corpus_is_scored_with_the_corpus_statistics(lexical):
    outside = "Chronic kidney disease and vitamin D."
    assert lexical.pair_scores(["kidney"], [outside])[0] > 0
    assert lexical.pair_scores(["kidney"], ["Nothing shared here."])[0] == 0


@pytest.mark.slow  # loads MiniLM (about 8 s alone)
def test_the_teachers_margins_add_bm25_in_the_cosines_units_to_the_base_models_margins(lexical):
    model = MiniLMEmbedding({"max_seq_length": 64})
    try:
        def encode(texts: list[str]) -> np.ndarray:
            return np.asarray(model.embed_documents(texts))

        queries = ["kidney disease", "cholesterol drugs", "heart failure treatment"]
        positives = [CORPUS[2], CORPUS[1], CORPUS[3]]
        negatives = [CORPUS[4], CORPUS[4], CORPUS[0]]
        margins = HybridTeacher(lexical).margins(encode, queries, positives, negatives)
    finally:
        model.close()
    assert margins.lexical_weight > 0
    np.testing.assert_allclose(margins.margins, margins.dense_margins + margins.lexical_weight *
                               margins.lexical_margins)
    np.testing.assert_allclose((margins.lexical_weight * margins.lexical_margins).std(), margins.dense_margins.std(),
                               rtol=1e-6)
    assert (margins.margins > 0).all()  # each positive shares the query's words and topic, its negative neither
    described = margins.describe()
    assert described["triples"] == 3 and described["triples_with_negative_margin"] == 0
