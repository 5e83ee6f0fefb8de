"""The hybrid teacher whose margins ``--corpus`` distils (``finetuning/teacher.py``): its BM25 and its margins."""

from __future__ import annotations

from functools import partial

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
        margins = HybridTeacher(lexical).margins(encode, queries, positives, negatives, length=64)
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
    assert described["negatives_read_from_cached_vectors"] == 0


@pytest.fixture(scope="module")
def cached_corpus(tmp_path_factory):
    """CORPUS as a folder of documents, embedded by the base model the way the pipeline does before training
    (``base_corpus_vectors``: the embedding cache's vectors), and its documents' indexed texts."""
    import dashrag
    from dashrag.finetuning.pairs import document_texts
    from dashrag.finetuning.pipeline import PipelineSettings, base_corpus_vectors

    root = tmp_path_factory.mktemp("cached")
    folder = root / "corpus"
    folder.mkdir()
    for i, text in enumerate(CORPUS):
        (folder / f"doc{i}.txt").write_text(text, encoding="utf-8")
    settings = PipelineSettings(dataset=folder, out=root / "out.json", model_dir=root / "model",
                                workdir=root / "work")
    texts = list(document_texts(dashrag.Corpus.from_path(folder)).values())
    return base_corpus_vectors(settings, lambda *args: None), texts


@pytest.mark.slow  # loads MiniLM twice and embeds five documents (about 15 s)
def test_negatives_read_from_the_cached_corpus_vectors_give_the_encoded_margins(lexical, cached_corpus):
    from dashrag.finetuning.base_model import resolve_embedding_base
    from dashrag.finetuning.embedding_trainer import encode_unit, load_base

    cached, texts = cached_corpus
    assert cached.reading_length == 256  # MiniLM's own limit: what the hybrid's dense child read the corpus at
    queries = ["kidney disease", "cholesterol drugs", "heart failure treatment", "bacteria and immunity"]
    positives = ["The kidney filters blood.", texts[1], "Beta blockers for heart failure.", texts[4]]
    negatives = [texts[4], texts[4], texts[0], "A text that is in no corpus, about the immune system."]
    for length in (256, 64):  # the trainer's length: the cache's, then another (nothing read: encoded as before)
        model = load_base(resolve_embedding_base("MiniLMEmbedding"), length, "cpu")
        encode = partial(encode_unit, model)
        encoded = HybridTeacher(lexical).margins(encode, queries, positives, negatives, length=length)
        teacher = HybridTeacher(lexical, cached)
        read = teacher.margins(encode, queries, positives, negatives, length=length)
        np.testing.assert_allclose(read.dense_margins, encoded.dense_margins, atol=1e-5)
        np.testing.assert_allclose(read.margins, encoded.margins, atol=1e-5)
        assert read.lexical_weight == pytest.approx(encoded.lexical_weight, rel=1e-4)
        held = 3 if length == 256 else 0  # the three corpus documents; the outside text is encoded
        assert read.negatives_read == held and read.describe()["negatives_read_from_cached_vectors"] == held
        # what the budget plans per triple: the positive, and the negative unless it is read
        assert teacher.documents_per_triple(negatives, length) == pytest.approx(2 - held / 4)
    assert HybridTeacher(lexical).documents_per_triple(negatives, 256) == 2
