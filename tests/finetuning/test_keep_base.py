"""The keep-the-base rule: the learned tree ships only when it beats the base on held-out pseudo-queries."""

from __future__ import annotations

import pytest

from dashrag.api import prepare_corpus
from dashrag.core.validation import validate_and_transform
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import SourceDocument
from dashrag.finetuning.keep_base import BASE, LEARNED, choose_tree, compare_on_held_out, held_out_score
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
