"""The rerank query and reranking in rounds."""

from __future__ import annotations

import math

import pytest

from dashrag.boolean import parse, rerank_in_rounds, rerank_query, semantic_clauses
from dashrag.boolean.normalise_text import normalise_words
from dashrag.boolean.rerank import plan_rounds
from dashrag.documents.model import Chunk, ScoredChunk
from dashrag.errors import RetrievalError


def test_rerank_query_joins_the_semantic_clauses_with_and():
    tree = parse("""("kitchen floor" OR 'mop') AND "asylum seeker" AND COUNTRY_OF_ORIGIN=IQ""")
    assert rerank_query(tree) == "kitchen floor AND asylum seeker"


def test_rerank_query_leaves_out_negated_phrases():
    assert rerank_query(parse('"asylum seeker" AND NOT "detention" AND NOT NOT "appeal"')) == "asylum seeker AND appeal"


def test_rerank_query_counts_a_repeated_phrase_once():
    assert [c.phrase for c in semantic_clauses(parse('"mop" OR ("mop" AND CAT1=A)'))] == ["mop"]


def test_rerank_query_is_empty_without_semantic_clauses():
    assert rerank_query(parse("'mop' AND CAT1=A")) == ""


def test_plan_rounds_covers_everything():
    assert plan_rounds(12001, 5000) == [(0, 5000), (5000, 10000), (10000, 12001)]


def _fragments(texts: list[str]) -> list[ScoredChunk]:
    return [ScoredChunk(Chunk(i, f"d{i}", 0, text), 1.0 - i / 100, "text") for i, text in enumerate(texts)]


class WordOverlapReranker:
    """A real (lexical) relevance score: the share of query words the text contains; records each call."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, query: str, texts, fragments):
        self.calls.append(list(texts))
        wanted = set(normalise_words(query)) - {"and"}
        return [len(wanted & set(normalise_words(t))) / len(wanted) for t in texts]


TEXTS = [
    "garage shelves", "bread dough", "paint tins", "wet mop", "kitchen floor mop",
    "a floor", "tiles", "kitchen", "recycling", "oven", "kitchen floor with a mop", "none",
]


def test_rounds_have_at_most_round_size_fragments():
    reranker = WordOverlapReranker()
    rerank_in_rounds("kitchen floor AND mop", _fragments(TEXTS), reranker, round_size=5)
    assert [len(call) for call in reranker.calls] == [5, 5, 2]


def test_rounds_are_merged_and_sorted_globally():
    ranked, info = rerank_in_rounds("kitchen floor AND mop", _fragments(TEXTS), WordOverlapReranker(), round_size=5)
    # ids 4 (round 1) and 10 (round 3) hold all three words; 3, 5 and 7 hold one each (ties by id)
    assert ([f.id for f in ranked[:5]], len(ranked), info["rounds"]) == ([4, 10, 3, 5, 7], 12, [5, 5, 2])


def test_reranked_fragments_keep_their_previous_score():
    ranked, _ = rerank_in_rounds("mop", _fragments(TEXTS), WordOverlapReranker(), round_size=5)
    top = ranked[0]
    assert (top.id, top.score, top.source, top.provenance["pre_rerank_score"], top.provenance["rerank_round"]) == (
        3, 1.0, "rerank", 0.97, 1
    )


def test_texts_are_truncated_for_the_reranker_only():
    reranker = WordOverlapReranker()
    fragments = _fragments(["kitchen " * 5 + "mop"])
    ranked, info = rerank_in_rounds("mop", fragments, reranker, max_chars=20)
    assert (reranker.calls[0][0], ranked[0].score, ranked[0].chunk.text, info["truncated_texts"]) == (
        "kitchen kitchen kitc", 0.0, fragments[0].chunk.text, 1
    )


def test_duplicates_are_reranked_once():
    reranker = WordOverlapReranker()
    fragments = _fragments(TEXTS[:3])
    ranked, _ = rerank_in_rounds("paint", fragments + [fragments[2].rescored(0.1, "other")], reranker)
    assert (len(reranker.calls[0]), [f.id for f in ranked]) == (3, [2, 0, 1])


def test_wrong_number_of_scores_is_an_error():
    with pytest.raises(RetrievalError, match="returned 1 scores for 3 texts in round 1"):
        rerank_in_rounds("q", _fragments(TEXTS[:3]), lambda q, texts, fragments: [0.5])


def test_non_finite_score_is_an_error():
    with pytest.raises(RetrievalError, match="non-finite"):
        rerank_in_rounds("q", _fragments(TEXTS[:2]), lambda q, texts, fragments: [0.5, math.nan])
