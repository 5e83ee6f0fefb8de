"""Algebraic properties of every fusion mode, checked with hypothesis.

Children are drawn as best-first lists over a small pool of chunk ids (so they
overlap), with raw scores anywhere in the finite floats, sorted descending as a
retriever returns them.
"""


import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dashrag.documents.model import Chunk, ScoredChunk
from dashrag.fusion.strategies import STRATEGY_NAMES, fuse

FAST = settings(max_examples=40, deadline=None)
RANK_BASED = ("round_robin", "rrf")
SCORE_BASED = ("relative_score", "dist_based", "max")
SCORED_BY_VALUE = ("rrf",) + SCORE_BASED  # modes whose order follows the fused score

modes = st.sampled_from(STRATEGY_NAMES)
raw_scores = st.floats(allow_nan=False, allow_infinity=False)
weight_values = st.one_of(st.just(0.0), st.floats(0.01, 10.0))


def scored(chunk_id: int, score: float) -> ScoredChunk:
    chunk = Chunk(id=chunk_id, document_id=f"doc{chunk_id}", position=0, text=f"chunk {chunk_id}")
    return ScoredChunk(chunk=chunk, score=score, source="child")


@st.composite
def child_list(draw):
    chunk_ids = draw(st.lists(st.integers(0, 11), unique=True, max_size=8))
    values = sorted(draw(st.lists(raw_scores, min_size=len(chunk_ids), max_size=len(chunk_ids))), reverse=True)
    return [scored(i, s) for i, s in zip(chunk_ids, values)]


@st.composite
def weighted_children(draw, min_children=1, max_children=4):
    children = draw(st.lists(child_list(), min_size=min_children, max_size=max_children))
    weights = draw(st.lists(weight_values, min_size=len(children), max_size=len(children)))
    assume(any(w > 0 for w in weights))
    return children, weights


def ids(fused):
    return [s.chunk.id for s in fused]


def scores(fused):
    return [s.score for s in fused]


def ids_of(child):
    return {s.chunk.id for s in child}


# --- dedup ------------------------------------------------------------------------

@FAST
@given(weighted_children(), modes)
def test_no_chunk_id_appears_twice(case, strategy):
    children, weights = case
    fused_ids = ids(fuse(children, strategy, weights))
    assert len(fused_ids) == len(set(fused_ids))


@FAST
@given(weighted_children(), modes)
def test_every_chunk_of_a_child_with_positive_weight_is_kept_and_no_other(case, strategy):
    children, weights = case
    expected = set().union(*(ids_of(c) for c, w in zip(children, weights) if w > 0))
    assert set(ids(fuse(children, strategy, weights))) == expected


@FAST
@given(weighted_children(), modes, st.integers(1, 10))
def test_top_k_is_a_prefix_of_the_full_fusion(case, strategy, top_k):
    children, weights = case
    assert fuse(children, strategy, weights, top_k=top_k) == fuse(children, strategy, weights)[:top_k]


# --- weights ------------------------------------------------------------------

@FAST
@given(weighted_children(), modes, st.data())
def test_raising_a_childs_weight_never_moves_its_chunks_below_chunks_it_did_not_return(case, strategy, data):
    children, weights = case
    j = data.draw(st.integers(0, len(children) - 1))
    raised = list(weights)
    raised[j] += data.draw(st.floats(0.01, 10.0))
    before = {cid: pos for pos, cid in enumerate(ids(fuse(children, strategy, weights)))}
    after = {cid: pos for pos, cid in enumerate(ids(fuse(children, strategy, raised)))}
    own = ids_of(children[j])
    for x in own & before.keys():
        for y in before.keys() - own:
            if before[x] < before[y]:
                assert after[x] < after[y]


@FAST
@given(weighted_children(min_children=2), modes, st.data())
def test_a_child_of_weight_zero_changes_nothing_compared_with_leaving_it_out(case, strategy, data):
    children, weights = case
    j = data.draw(st.integers(0, len(children) - 1))
    zeroed = list(weights)
    zeroed[j] = 0.0
    assume(any(w > 0 for w in zeroed))
    with_zero = fuse(children, strategy, zeroed)
    without = fuse(children[:j] + children[j + 1:], strategy, zeroed[:j] + zeroed[j + 1:])
    assert ids(with_zero) == ids(without) and scores(with_zero) == scores(without)


# --- ties and order -------------------------------------------------------------

@FAST
@given(weighted_children(), st.sampled_from(SCORED_BY_VALUE))
def test_score_ordered_modes_return_scores_best_first(case, strategy):
    children, weights = case
    fused_scores = scores(fuse(children, strategy, weights))
    assert fused_scores == sorted(fused_scores, reverse=True)


@FAST
@given(weighted_children(), st.sampled_from(SCORED_BY_VALUE))
def test_equal_scores_are_ordered_by_best_contributing_rank_then_chunk_id(case, strategy):
    children, weights = case
    fused = fuse(children, strategy, weights)

    def tie_key(s):
        ranks = [hit["rank"] for child, hit in s.provenance["children"].items() if weights[int(child)] > 0]
        return (min(ranks), s.chunk.id)

    for first, second in zip(fused, fused[1:]):
        if first.score == second.score:
            assert tie_key(first) < tie_key(second)


@FAST
@given(weighted_children())
def test_round_robin_scores_fall_strictly_with_the_fused_position(case):
    children, weights = case
    assert scores(fuse(children, "round_robin", weights)) == [
        1 / p for p in range(1, len(fuse(children, "round_robin", weights)) + 1)]


@FAST
@given(weighted_children(), st.sampled_from(SCORE_BASED))
def test_score_based_fused_scores_lie_in_the_unit_interval(case, strategy):
    children, weights = case
    assert all(0.0 <= s <= 1.0 for s in scores(fuse(children, strategy, weights)))


# --- empty, single and identical children -----------------------------------------

@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@pytest.mark.parametrize("n_children", [0, 1, 3])
def test_children_that_all_return_nothing_fuse_to_nothing(strategy, n_children):
    assert fuse([[] for _ in range(n_children)], strategy) == []


def with_an_empty_child(case, strategy, data):
    """``(fused with an empty child of any weight inserted anywhere, fused as given)``."""
    children, weights = case
    j = data.draw(st.integers(0, len(children)))
    padded = fuse(children[:j] + [[]] + children[j:], strategy,
                  weights[:j] + [data.draw(weight_values)] + weights[j:])
    return padded, fuse(children, strategy, weights)


@FAST
@given(weighted_children(), modes, st.data())
def test_an_empty_child_leaves_the_order_as_if_it_were_absent(case, strategy, data):
    padded, plain = with_an_empty_child(case, strategy, data)
    assert ids(padded) == ids(plain)


@FAST
@given(weighted_children(), st.sampled_from(RANK_BASED), st.data())
def test_an_empty_child_leaves_rank_based_scores_as_if_it_were_absent(case, strategy, data):
    padded, plain = with_an_empty_child(case, strategy, data)
    assert scores(padded) == scores(plain)


@FAST
@given(child_list(), modes)
def test_a_single_child_keeps_its_order(child, strategy):
    assert ids(fuse([child], strategy)) == [s.chunk.id for s in child]


@FAST
@given(child_list(), modes, st.integers(2, 4))
def test_identical_children_keep_the_childs_order(child, strategy, copies):
    assert ids(fuse([child] * copies, strategy)) == [s.chunk.id for s in child]


@FAST
@given(child_list(), st.sampled_from(("round_robin",) + SCORE_BASED), st.integers(2, 4))
def test_identical_children_with_equal_weights_score_as_one_child(child, strategy, copies):
    assert scores(fuse([child] * copies, strategy)) == pytest.approx(scores(fuse([child], strategy)), rel=1e-12)


@FAST
@given(child_list(), st.integers(2, 4))
def test_identical_children_add_up_their_rrf_scores(child, copies):
    assert scores(fuse([child] * copies, "rrf")) == pytest.approx(
        [copies * s for s in scores(fuse([child], "rrf"))], rel=1e-12)


# --- permutation invariance -----------------------------------------------------

@FAST
@given(st.lists(child_list(), min_size=1, max_size=4), st.sampled_from(SCORED_BY_VALUE), st.randoms())
def test_reordering_children_with_equal_weights_changes_nothing(children, strategy, rnd):
    shuffled = list(children)
    rnd.shuffle(shuffled)
    original, permuted = fuse(children, strategy), fuse(shuffled, strategy)
    assert ids(permuted) == ids(original) and scores(permuted) == scores(original)


@FAST
@given(weighted_children(), st.sampled_from(SCORED_BY_VALUE), st.randoms())
def test_reordering_children_together_with_their_weights_changes_nothing(case, strategy, rnd):
    children, weights = case
    order = list(range(len(children)))
    rnd.shuffle(order)
    original = fuse(children, strategy, weights)
    permuted = fuse([children[i] for i in order], strategy, [weights[i] for i in order])
    assert ids(permuted) == ids(original) and scores(permuted) == scores(original)


# --- provenance --------------------------------------------------------------------

@FAST
@given(weighted_children(), modes)
def test_provenance_names_every_child_that_returned_the_chunk_with_its_rank_and_raw_score(case, strategy):
    children, weights = case
    for fused in fuse(children, strategy, weights):
        expected = {str(i): (rank, s.score)
                    for i, child in enumerate(children)
                    for rank, s in enumerate(child, start=1) if s.chunk.id == fused.chunk.id}
        recorded = {i: (hit["rank"], hit["score"]) for i, hit in fused.provenance["children"].items()}
        assert recorded == expected and fused.provenance["fused_score"] == fused.score


@FAST
@given(weights=st.lists(st.floats(0.01, 10.0), min_size=1, max_size=4),
       equal=st.booleans(), ranks=st.lists(st.integers(1, 30), min_size=1, max_size=20), data=st.data())
def test_round_robin_turn_clock_orders_turns_exactly_as_round_robin_turn(weights, equal, ranks, data):
    from dashrag.fusion.strategies import _turn_clock, round_robin_turn

    w = [weights[0]] * len(weights) if equal else weights
    children = [data.draw(st.integers(0, len(w) - 1)) for _ in ranks]
    clock = _turn_clock(w)
    by_clock = sorted(zip(ranks, children), key=lambda rc: (clock(*rc), rc[1]))
    by_fraction = sorted(zip(ranks, children), key=lambda rc: (round_robin_turn(rc[0], w[rc[1]]), rc[1]))
    assert by_clock == by_fraction
