"""The fragment algebra, checked against hand arithmetic."""

from __future__ import annotations

import math

import pytest

from dashrag.boolean import FragmentSet, Scope, combine_and, combine_or, complement, geometric_combination
from dashrag.boolean.algebra import IndexedDocuments
from dashrag.documents.model import Chunk, ScoredChunk

# chunk id -> document id
DOCS = {1: "d1", 2: "d1", 3: "d2", 4: "d1", 5: "d3", 6: "d4"}
CHUNKS = {cid: Chunk(cid, doc, position=cid, text=f"chunk {cid}") for cid, doc in DOCS.items()}


def frag(cid: int, score: float, source: str = "semantic") -> ScoredChunk:
    return ScoredChunk(CHUNKS[cid], score, source)


def fragments(scores: dict[int, float], is_filter: bool = False, source: str = "semantic") -> FragmentSet:
    return FragmentSet.of((frag(cid, s, source) for cid, s in scores.items()), is_filter=is_filter)


def scores_of(result: FragmentSet) -> dict[int, float]:
    return {cid: f.score for cid, f in result.fragments.items()}


def test_geometric_combination_of_two_is_the_issue_formula():
    # l=0.8 of l_max=0.8, r=0.5 of r_max=1.0: sqrt(1.0 * 0.5) * sqrt(0.8 * 1.0) = sqrt(0.4)
    assert geometric_combination([0.8, 0.5], [0.8, 1.0]) == pytest.approx(math.sqrt(0.4))


def test_geometric_combination_of_three_uses_the_cube_root():
    # norms 1/2, 2/4, 4/8 -> (1/8)^(1/3) = 1/2; maxima 2*4*8 = 64 -> 64^(1/3) = 4; product 2
    assert geometric_combination([1.0, 2.0, 4.0], [2.0, 4.0, 8.0]) == pytest.approx(2.0)


def test_geometric_combination_with_a_zero_maximum_is_zero():
    assert geometric_combination([0.0, 0.5], [0.0, 1.0]) == 0.0


def test_and_of_scored_branches_keeps_only_shared_documents():
    left = fragments({1: 0.8, 2: 0.4, 3: 0.2})      # d1, d1, d2
    right = fragments({1: 0.5, 4: 1.0, 5: 0.6})     # d1, d1, d3
    assert combine_and([left, right]).document_ids == {"d1"}


def test_and_geometric_mean_for_a_fragment_both_branches_returned():
    left = fragments({1: 0.8, 2: 0.4, 3: 0.2})
    right = fragments({1: 0.5, 4: 1.0, 5: 0.6})
    # chunk 1: l_norm = 0.8/0.8 = 1, r_norm = 0.5/1.0 = 0.5 -> sqrt(0.5) * sqrt(0.8 * 1.0) = sqrt(0.4)
    assert scores_of(combine_and([left, right]))[1] == pytest.approx(0.6324555320336759)


def test_and_credits_a_missing_fragment_with_the_branch_minimum():
    left = fragments({1: 0.8, 2: 0.4, 3: 0.2})      # l_max 0.8, l_min 0.2
    right = fragments({1: 0.5, 4: 1.0, 5: 0.6})     # r_max 1.0, r_min 0.5
    result = scores_of(combine_and([left, right]))
    # chunk 2 (left only): l_norm 0.4/0.8 = 0.5, right credited 0.5 -> r_norm 0.5: sqrt(0.25) * sqrt(0.8) = 0.4472...
    # chunk 4 (right only): left credited 0.2 -> l_norm 0.25, r_norm 1.0: sqrt(0.25) * sqrt(0.8) = 0.4472...
    assert (result[2], result[4]) == (pytest.approx(0.4472135954999579), pytest.approx(0.4472135954999579))


def test_and_ranks_fragments_matching_both_sides_above_those_matching_one():
    left = fragments({1: 0.8, 2: 0.4, 3: 0.2})
    right = fragments({1: 0.5, 4: 1.0, 5: 0.6})
    assert [f.id for f in combine_and([left, right]).ranked()] == [1, 2, 4]


def test_and_records_the_parts_of_a_combined_score():
    left = fragments({1: 0.8, 3: 0.2})
    right = fragments({1: 0.5, 4: 1.0})
    combined = combine_and([left, right]).fragments[1]
    assert (combined.source, combined.provenance["and_scores"], combined.provenance["and_maxima"]) == (
        "and", [0.8, 0.5], [0.8, 1.0]
    )


def test_and_with_a_filter_keeps_the_partner_scores_unchanged():
    scored = fragments({1: 0.7, 3: 0.3, 6: 0.9})                                  # d1, d2, d4
    category = fragments({1: 1.0, 2: 1.0, 4: 1.0, 5: 1.0}, is_filter=True, source="category")  # d1, d3
    result = combine_and([scored, category])
    assert (result.fragments, result.is_filter) == ({1: frag(1, 0.7)}, False)


def test_and_filter_does_not_add_fragments_the_scored_branch_did_not_return():
    scored = fragments({1: 0.7})
    category = fragments({1: 1.0, 2: 1.0, 4: 1.0}, is_filter=True, source="category")
    assert set(combine_and([category, scored]).fragments) == {1}


def test_and_of_filters_keeps_the_union_in_shared_documents_with_the_maximum():
    first = fragments({1: 1.0, 2: 0.7, 3: 1.0}, is_filter=True, source="category")    # d1, d1, d2
    second = fragments({2: 0.9, 4: 1.0, 5: 1.0}, is_filter=True, source="category")   # d1, d1, d3
    result = combine_and([first, second])
    assert (scores_of(result), result.is_filter) == ({1: 1.0, 2: 0.9, 4: 1.0}, True)


def test_and_of_three_scored_branches():
    a = fragments({1: 1.0, 2: 0.5})    # max 1, min 0.5
    b = fragments({1: 2.0, 4: 4.0})    # max 4, min 2
    c = fragments({1: 4.0, 6: 8.0})    # max 8, min 4 (d4 is not shared: only d1 survives)
    # chunk 1: norms 1, 0.5, 0.5 -> (0.25)^(1/3); maxima 1*4*8 = 32 -> 32^(1/3); product = 8^(1/3) = 2
    assert scores_of(combine_and([a, b, c]))[1] == pytest.approx(2.0)


def test_or_keeps_one_fragment_per_chunk_with_the_maximum():
    left = fragments({1: 0.3, 3: 0.2})
    right = FragmentSet.of([frag(1, 0.9, "text"), frag(5, 0.1, "text")])
    result = combine_or([left, right])
    assert result.fragments == {1: frag(1, 0.9, "text"), 3: frag(3, 0.2), 5: frag(5, 0.1, "text")}


def test_or_is_a_filter_only_when_every_operand_is():
    category = fragments({1: 1.0}, is_filter=True, source="category")
    assert (combine_or([category, category]).is_filter, combine_or([category, fragments({3: 0.4})]).is_filter) == (
        True,
        False,
    )


def test_not_returns_every_fragment_of_the_other_documents_in_scope():
    scope = Scope.from_chunks(CHUNKS.values())
    result = complement(fragments({1: 0.9}), scope)  # operand reaches d1 (chunks 1, 2, 4)
    assert (set(result.fragments), result.is_filter, {f.score for f in result.fragments.values()}) == (
        {3, 5, 6},
        True,
        {1.0},
    )


def test_not_stays_within_the_scope():
    scope = Scope.from_chunks(CHUNKS.values()).restricted_to({"d1", "d2"})
    assert set(complement(fragments({1: 0.9}), scope).fragments) == {3}


def test_fragment_set_of_keeps_the_best_duplicate():
    assert FragmentSet.of([frag(1, 0.2), frag(1, 0.6), frag(1, 0.4)]).fragments[1].score == 0.6


def test_ranked_breaks_ties_by_chunk_id():
    assert [f.id for f in fragments({5: 0.5, 1: 0.5, 3: 0.9}).ranked()] == [3, 1, 5]


def test_scope_from_chunks_orders_chunks_by_position():
    chunks = [Chunk(9, "d", 1, "b"), Chunk(8, "d", 0, "a")]
    assert [c.id for c in Scope.from_chunks(chunks).chunks_by_document["d"]] == [8, 9]


# -- lazy filters and indexed document sets ---------------------------------------------


def eager_filter(scope: Scope, documents, source: str) -> dict:
    return {c.id: ScoredChunk(c, 1.0, source) for d in documents for c in scope.chunks_by_document.get(d, ())}


def test_a_filter_is_not_built_until_a_fragment_is_asked_for():
    filtered = Scope.from_chunks(CHUNKS.values()).filter_fragments({"d1", "d3"}, "category")
    before = filtered.fragments.built
    assert (before, len(filtered), filtered.document_ids, filtered.fragments.built) == (False, 4, {"d1", "d3"}, False)


def test_a_built_filter_equals_the_eager_one():
    scope = Scope.from_chunks(CHUNKS.values())
    assert dict(scope.filter_fragments({"d1", "d3"}, "category").fragments) == eager_filter(
        scope, {"d1", "d3"}, "category"
    )


def test_a_filter_keeps_only_documents_in_scope():
    scope = Scope.from_chunks(CHUNKS.values()).restricted_to({"d1", "d2"})
    assert set(scope.filter_fragments({"d1", "d3"}, "category").fragments) == {1, 2, 4}


def test_the_top_scores_of_an_unbuilt_filter_need_no_building():
    filtered = Scope.from_chunks(CHUNKS.values()).filter_fragments({"d1"}, "category")
    assert (filtered.top_scores(5), filtered.fragments.built) == ([1.0, 1.0, 1.0], False)


def test_and_of_unbuilt_filters_stays_unbuilt_and_equals_the_eager_result():
    scope = Scope.from_chunks(CHUNKS.values())
    lazy = combine_and([scope.filter_fragments({"d1", "d2"}, "category"), scope.filter_fragments({"d2", "d3"}, "not")])
    assert (lazy.fragments.built, lazy.is_filter, dict(lazy.fragments)) == (
        False,
        True,
        eager_filter(scope, {"d2"}, "category"),
    )


def test_narrowing_a_scope_shares_its_universe():
    scope = Scope.from_chunks(CHUNKS.values())
    narrow = scope.restricted_to({"d1", "d9"})
    assert (narrow.universe is scope.universe, narrow.document_ids, scope.is_universe, narrow.is_universe) == (
        True,
        {"d1"},
        True,
        False,
    )


def test_an_indexed_set_passes_through_narrowing_unchanged():
    scope = Scope.from_chunks(CHUNKS.values())
    indexed = IndexedDocuments({"d1", "d2"}, mask=[True, True, False, False], chunk_count=4, universe=scope.universe)
    assert scope.restricted_to(indexed).document_ids is indexed


def test_an_indexed_set_s_chunk_count_is_the_filter_s_length():
    scope = Scope.from_chunks(CHUNKS.values())
    indexed = IndexedDocuments({"d1"}, chunk_count=3, universe=scope.universe)
    assert len(scope.filter_fragments(indexed, "category")) == 3


def test_an_operation_on_an_indexed_set_makes_a_plain_set():
    assert type(IndexedDocuments({"d1", "d2"}, chunk_count=2) & frozenset({"d1"})) is frozenset


def test_the_ranking_is_kept_and_a_limit_is_its_prefix():
    result = fragments({1: 0.2, 3: 0.9, 5: 0.5, 6: 0.5})
    assert ([f.id for f in result.ranked(2)], [f.id for f in result.ranked()]) == ([3, 5], [3, 5, 6, 1])
