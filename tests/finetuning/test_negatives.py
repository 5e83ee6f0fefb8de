"""Hard negatives come from the user's BM25 tree and are never a judged document."""

from __future__ import annotations

import pytest

import dashrag
from dashrag.evaluation.beir import load_split
from dashrag.finetuning.negatives import (
    Candidates,
    build_first_stage,
    hard_negatives,
    negatives_per_pair,
    rank_documents,
)
from dashrag.finetuning.pairs import JudgedPair


@pytest.fixture(scope="module")
def ranked(tiny_scifact, tmp_path_factory):
    split = load_split(tiny_scifact, "train")
    corpus = dashrag.Corpus.from_beir(tiny_scifact)
    tree = build_first_stage("keyword", corpus, tmp_path_factory.mktemp("bm25"))
    try:
        expected = {q: [c.document_id for c in tree.retrieve(text, top_k=30)[0]] for q, text in split.queries.items()}
        candidates = rank_documents(tree, split, depth=30, batch_size=5)
    finally:
        tree.close()
    return split, corpus, candidates, expected


def test_the_rankings_are_the_bm25_trees_own_answers(ranked):
    split, _, candidates, expected = ranked
    assert candidates.ranked == expected


def test_no_hard_negative_is_a_judged_document(ranked):
    split, _, candidates, _ = ranked
    for query_id, judged in split.qrels.items():
        negatives = hard_negatives(candidates, split.qrels, query_id, count=5)
        assert negatives and not set(negatives) & set(judged)
        unjudged = [d for d in candidates.ranked[query_id] if d not in judged]
        assert negatives == unjudged[:5]  # the highest-ranked misses, in order


def test_skip_passes_over_the_top_misses(ranked):
    split, _, candidates, _ = ranked
    query_id = next(iter(split.qrels))
    assert hard_negatives(candidates, split.qrels, query_id, 2, skip=1) == \
        hard_negatives(candidates, split.qrels, query_id, 3)[1:]


def test_a_document_judged_not_relevant_is_a_hard_negative_and_one_judged_relevant_never():
    qrels = {"q": {"p1": 2, "p2": 1, "z": 0}}
    candidates = Candidates({"q": ["p1", "z", "p2", "n1"]})
    assert hard_negatives(candidates, qrels, "q", count=3) == ["z", "n1"]


def test_a_query_with_several_positives_gets_a_different_negative_for_each():
    qrels = {"q": {"p1": 1, "p2": 1}, "r": {"p3": 1}}
    candidates = Candidates({"q": ["p1", "n1", "p2", "n2", "n3"], "r": ["n1"]})
    pairs = [JudgedPair("q", "", "p1", "", 1), JudgedPair("q", "", "p2", "", 1), JudgedPair("r", "", "p3", "", 1),
             JudgedPair("r", "", "p3", "", 1)]
    assert negatives_per_pair(candidates, qrels, pairs) == ["n1", "n2", "n1", None]  # None: the ranking ran out
