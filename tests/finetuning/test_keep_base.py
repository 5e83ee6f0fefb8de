"""The keep-the-base rule: the learned tree ships only when it beats the base on held-out pseudo-queries."""

from __future__ import annotations

import pytest

from dashrag.api import prepare_corpus
from dashrag.core.validation import validate_and_transform
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import SourceDocument
from dashrag.finetuning.keep_base import (
    BASE,
    LEARNED,
    choose_dense_model,
    choose_tree,
    compare_on_held_out,
    held_out_score,
)
from dashrag.finetuning.negatives import WHOLE_DOCUMENTS
from dashrag.finetuning.pseudo_queries import TITLE, pseudo_queries, pseudo_split
from dashrag.presets import load_preset

TOPICS = {
    "volcano": "Magma rises through the crust and erupts as lava. Ash clouds can ground flights for days.",
    "sourdough": "A starter of flour and water ferments with wild yeast. The dough proofs overnight.",
    "violin": "The bow's horsehair is rubbed with rosin. Four strings are tuned in fifths.",
    "glacier": "Compacted snow turns to ice and flows downhill. Moraines mark where it once reached.",
    "chess": "Each player starts with sixteen pieces. Castling moves the king two squares.",
}


def test_a_learned_tree_that_scores_higher_ships():
    choice = choose_tree(0.50, 0.56)
    assert choice.shipped == LEARNED
    assert "0.5600" in choice.reason and "0.5000" in choice.reason


@pytest.mark.parametrize("learned", [0.50, 0.49, 0.0])
def test_a_tie_or_a_loss_keeps_the_base(learned):
    choice = choose_tree(0.50, learned)
    assert choice.shipped == BASE
    assert "base is kept" in choice.reason


def test_a_gain_not_above_the_margin_keeps_the_base():
    assert choose_tree(0.50, 0.505, min_gain=0.01).shipped == BASE
    assert choose_tree(0.50, 0.52, min_gain=0.01).shipped == LEARNED


def test_a_negative_margin_is_refused():
    with pytest.raises(ValueError, match="min_gain"):
        choose_tree(0.5, 0.6, min_gain=-0.1)


def test_a_corpus_the_base_answers_perfectly_keeps_the_base(tmp_path):
    corpus = Corpus(tuple(SourceDocument(name, text, title=f"All about the {name} topic")
                          for name, text in TOPICS.items()))
    held_out = pseudo_split(pseudo_queries(corpus.documents, sources=[TITLE]), "topics", "held-out")
    infra = prepare_corpus(corpus, tmp_path, WHOLE_DOCUMENTS)
    base = validate_and_transform(load_preset("keyword"), "retriever")
    learned = validate_and_transform({"component": "BM25Retriever", "params": {"k1": 0.1, "b": 0.1}}, "retriever")
    assert held_out_score(base, held_out, infra) == pytest.approx(1.0)
    choice = compare_on_held_out(base, learned, held_out, infra)
    assert choice.shipped == BASE
    assert choice.base == pytest.approx(1.0)
    assert choice.to_json()["reason"] == choice.reason


def test_the_learned_model_stays_in_the_tree_only_when_it_alone_beats_the_base_model():
    kept = choose_dense_model({"base": 0.88, "learned": 0.90})
    assert kept["chosen"] == LEARNED and "0.9000" in kept["reason"] and "0.8800" in kept["reason"]
    for learned in (0.88, 0.80):  # a tie is no evidence of gain, as for the tree
        dropped = choose_dense_model({"base": 0.88, "learned": learned})
        assert dropped["chosen"] == BASE and "re-tuned" in dropped["reason"]


def test_without_training_the_tree_keeps_the_base_model():
    assert choose_dense_model({"base": 0.88}) == {
        "chosen": BASE, "reason": "no model was trained (--no-training): the tree keeps the base model"}


@pytest.mark.slow
def test_a_tree_that_takes_the_base_model_back_keeps_its_bm25_and_retunes_its_weight(tmp_path):
    """``retuned_with_model``: the learned tree's dense child swapped for the base model, BM25's k1 and b as
    tuned, the fusion weight searched again among the pipeline's weights (on real retrieval over five documents)."""
    from pathlib import Path

    from dashrag.finetuning.pipeline import (
        BM25_WEIGHTS,
        PipelineSettings,
        base_model_path,
        dense_child,
        hybrid_config,
        retuned_with_model,
    )

    corpus = Corpus(tuple(SourceDocument(name, text, title=f"All about the {name} topic")
                          for name, text in TOPICS.items()))
    split = pseudo_split(pseudo_queries(corpus.documents), "topics", "dev")
    infra = prepare_corpus(corpus, tmp_path, WHOLE_DOCUMENTS)
    settings = PipelineSettings(dataset=tmp_path, out=tmp_path / "p.json", model_dir=tmp_path / "m")
    base_model = base_model_path(settings)
    bm25 = {"component": "BM25Retriever", "params": {"k1": 0.9, "b": 0.6}}
    learned = hybrid_config(str(Path(base_model)), bm25)
    dense_child(learned)["params"]["embedding"]["params"]["model"] = str(tmp_path / "a-learned-model")
    learned["params"]["weights"] = [0.35, 1.0]
    retuned = retuned_with_model(learned, base_model, settings, split, infra)
    assert dense_child(retuned)["params"]["embedding"]["params"]["model"] == base_model
    keyword = retuned["params"]["children"][0]["params"]
    assert (keyword["k1"], keyword["b"]) == (0.9, 0.6)
    assert retuned["params"]["weights"][0] in BM25_WEIGHTS and retuned["params"]["weights"][1] == 1.0
