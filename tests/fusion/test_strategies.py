"""Each fusion mode against numbers computed by hand, plus the entry point's checks.

The running example: child 0 returns a, b, c with raw scores 10, 6, 2 (min-max:
1, 0.5, 0); child 1 returns c, a with raw scores 0.9, 0.3 (min-max: 1, 0).
"""

import math
from fractions import Fraction

import pytest

from dashrag.documents.model import Chunk, ScoredChunk
from dashrag.errors import ConfigError, RetrievalError
from dashrag.fusion.strategies import (
    STRATEGY_NAMES,
    dist_based,
    fuse,
    relative_score,
    round_robin,
    round_robin_turn,
    rrf,
    rrf_term,
    weighted_max,
)

A, B, C, D, E, F = 10, 11, 12, 13, 14, 15


def scored(chunk_id: int, score: float) -> ScoredChunk:
    chunk = Chunk(id=chunk_id, document_id=f"doc{chunk_id}", position=0, text=f"chunk {chunk_id}")
    return ScoredChunk(chunk=chunk, score=score, source="child")


def ids(fused):
    return [s.chunk.id for s in fused]


def scores(fused):
    return [s.score for s in fused]


EXAMPLE = [[scored(A, 10.0), scored(B, 6.0), scored(C, 2.0)], [scored(C, 0.9), scored(A, 0.3)]]


# --- round_robin -------------------------------------------------------------

def test_round_robin_turn_is_rank_minus_a_half_over_weight():
    assert [round_robin_turn(1, 2), round_robin_turn(2, 1), round_robin_turn(3, 0.5)] == [
        Fraction(1, 4), Fraction(3, 2), Fraction(5)]


def test_round_robin_with_equal_weights_is_the_plain_interleave_where_a_repeat_uses_up_the_turn():
    # turns: a(0), b(1), b(0, repeat), d(1), c(0) -- the reference's loop over ranks, then children
    fused = round_robin([[scored(A, 3.0), scored(B, 2.0), scored(C, 1.0)], [scored(B, 0.9), scored(D, 0.8)]])
    assert ids(fused) == [A, B, D, C]


def test_round_robin_scores_are_one_over_the_fused_position():
    fused = round_robin([[scored(A, 3.0), scored(B, 2.0)], [scored(C, 0.9)]])
    assert scores(fused) == [1.0, 1 / 2, 1 / 3]


def test_round_robin_gives_a_child_of_weight_two_two_turns_per_turn_of_a_weight_one_child():
    # turns of child 0 at 1/4, 3/4, 5/4, 7/4; of child 1 at 1/2, 3/2
    fused = round_robin([[scored(A, 4), scored(B, 3), scored(C, 2), scored(D, 1)], [scored(E, 2), scored(F, 1)]],
                        weights=[2, 1])
    assert ids(fused) == [A, E, B, C, F, D]


def test_round_robin_gives_simultaneous_turns_to_the_lower_child_index():
    assert ids(round_robin([[scored(9, 1.0)], [scored(3, 1.0)]])) == [9, 3]


# --- rrf ---------------------------------------------------------------------

def test_rrf_term_is_weight_over_k_plus_rank():
    assert rrf_term(rank=2, weight=3.0, k=60) == 3.0 / 62


def test_rrf_with_default_k_sums_one_over_sixty_plus_rank():
    fused = rrf(EXAMPLE)
    assert ids(fused) == [A, C, B]
    assert scores(fused) == pytest.approx([1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62], rel=1e-15)


def test_rrf_multiplies_each_childs_term_by_its_weight():
    # k = 1: a = 2/2 + 0.5/3, b = 2/3, c = 2/4 + 0.5/2
    fused = rrf(EXAMPLE, weights=[2.0, 0.5], k=1)
    assert ids(fused) == [A, C, B]
    assert scores(fused) == pytest.approx([1.0 + 0.5 / 3, 0.75, 2 / 3], rel=1e-15)


# --- relative_score ----------------------------------------------------------

def test_relative_score_is_the_weighted_mean_of_min_max_scores():
    # weights 3, 1: a = (3*1 + 1*0)/4, b = 3*0.5/4, c = (3*0 + 1*1)/4
    fused = relative_score(EXAMPLE, weights=[3.0, 1.0])
    assert ids(fused) == [A, B, C]
    assert scores(fused) == [0.75, 0.375, 0.25]


def test_relative_score_breaks_a_tie_by_best_rank_then_chunk_id_not_by_child():
    # both chunks are their child's only hit: 1.0 each, rank 1 each, so chunk 3 before chunk 9
    fused = relative_score([[scored(9, 5.0)], [scored(3, 0.1)]])
    assert ids(fused) == [3, 9] and scores(fused) == [0.5, 0.5]


# --- dist_based --------------------------------------------------------------

def test_dist_based_is_the_weighted_mean_of_mean_three_sigma_scores():
    # child 0: mean 6, sigma sqrt(32/3); child 1: mean 0.6, sigma 0.3 -> 1/2 +- 1/6
    spread = 4 / (6 * math.sqrt(32 / 3))
    fused = dist_based(EXAMPLE)
    assert ids(fused) == [A, C, B]
    assert scores(fused) == pytest.approx(
        [(0.5 + spread + 1 / 3) / 2, (0.5 - spread + 2 / 3) / 2, 0.5 / 2], rel=1e-12)


# --- max ---------------------------------------------------------------------

def test_max_takes_the_largest_weighted_min_max_score_over_the_largest_weight():
    # weights 1, 0.5: a = max(1, 0) = 1, b = 0.5, c = max(0, 0.5*1) = 0.5
    fused = weighted_max(EXAMPLE, weights=[1.0, 0.5])
    assert sorted(zip(ids(fused), scores(fused))) == [(A, 1.0), (B, 0.5), (C, 0.5)]


def test_max_puts_the_tied_chunk_with_the_better_best_rank_first():
    # b and c tie at 0.5; c was ranked 1st by child 1, b only 2nd by child 0
    assert ids(weighted_max(EXAMPLE, weights=[1.0, 0.5])) == [A, C, B]


def test_max_reports_scores_relative_to_the_largest_weight():
    # weights 4, 2 behave as 1, 0.5
    assert scores(weighted_max(EXAMPLE, weights=[4.0, 2.0])) == [1.0, 0.5, 0.5]


# --- what every mode shares ----------------------------------------------------

@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_a_child_of_weight_zero_adds_no_chunk_of_its_own(strategy):
    fused = fuse([[scored(A, 1.0)], [scored(B, 1.0), scored(A, 0.5)]], strategy, weights=[1.0, 0.0])
    assert ids(fused) == [A]


def test_provenance_keeps_each_childs_rank_and_raw_score_and_the_fused_score():
    top = rrf(EXAMPLE, source="hybrid")[0]
    assert top.source == "hybrid"
    assert top.provenance == {
        "fusion": "rrf",
        "fused_score": top.score,
        "children": {"0": {"rank": 1, "score": 10.0}, "1": {"rank": 2, "score": 0.3}},
    }


def test_score_based_provenance_adds_each_childs_normalised_score():
    top = relative_score(EXAMPLE)[0]
    assert top.provenance["children"] == {
        "0": {"rank": 1, "score": 10.0, "normalised": 1.0},
        "1": {"rank": 2, "score": 0.3, "normalised": 0.0},
    }


def test_provenance_also_names_a_weight_zero_child_that_returned_the_chunk():
    top = rrf(EXAMPLE, weights=[1.0, 0.0])[0]
    assert top.provenance["children"]["1"] == {"rank": 2, "score": 0.3}
    assert top.score == 1 / 61


def test_fused_chunks_keep_the_chunk_the_children_returned():
    assert rrf(EXAMPLE)[0].chunk is EXAMPLE[0][0].chunk


@pytest.mark.parametrize("strategy", ["relative_score", "dist_based", "max"])
def test_score_based_modes_refuse_a_non_finite_child_score(strategy):
    with pytest.raises(RetrievalError, match="child 1 gave chunk 11"):
        fuse([[scored(A, 1.0)], [scored(B, math.nan)]], strategy)


@pytest.mark.parametrize("strategy", ["round_robin", "rrf"])
def test_rank_based_modes_ignore_the_raw_score_values(strategy):
    assert ids(fuse([[scored(A, math.nan), scored(B, math.inf)]], strategy)) == [A, B]


# --- fuse, the entry point -------------------------------------------------------

@pytest.mark.parametrize("strategy,function", [
    ("round_robin", round_robin), ("rrf", rrf), ("relative_score", relative_score),
    ("dist_based", dist_based), ("max", weighted_max)])
def test_fuse_dispatches_to_the_named_mode(strategy, function):
    assert fuse(EXAMPLE, strategy, weights=[1.0, 2.0]) == function(EXAMPLE, weights=[1.0, 2.0])


def test_fuse_passes_k_to_rrf():
    assert scores(fuse(EXAMPLE, "rrf", k=0)) == scores(rrf(EXAMPLE, k=0))
    assert scores(fuse(EXAMPLE, "rrf", k=0))[-1] == 1 / 2


def test_fuse_cuts_the_fused_list_at_top_k():
    assert ids(fuse(EXAMPLE, "rrf", top_k=2)) == [A, C]


def test_fuse_of_no_children_is_empty():
    assert fuse([], "rrf") == []


def test_fuse_refuses_an_unknown_strategy_and_lists_the_known_ones():
    with pytest.raises(ConfigError, match="relative_score") as raised:
        fuse(EXAMPLE, "borda")
    assert raised.value.issues[0].path == "strategy"


@pytest.mark.parametrize("top_k", [0, -1, 2.5, True])
def test_fuse_refuses_a_top_k_that_is_not_a_positive_integer(top_k):
    with pytest.raises(ConfigError):
        fuse(EXAMPLE, "rrf", top_k=top_k)


@pytest.mark.parametrize("k", [-1, math.inf, math.nan])
def test_rrf_refuses_a_negative_or_non_finite_k(k):
    with pytest.raises(ConfigError):
        fuse(EXAMPLE, "rrf", k=k)


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_every_mode_refuses_weights_that_do_not_match_the_children(strategy):
    with pytest.raises(ConfigError):
        fuse(EXAMPLE, strategy, weights=[1.0])
