"""Selection: fast path, three-tier diversity selection, document aggregation and fill-up."""

from __future__ import annotations

import logging

import pytest

from dashrag.boolean import (
    SelectionThresholds,
    aggregate_documents,
    fast_path_select,
    fill_up,
    select_documents,
    three_tier_select,
)
from dashrag.documents.model import Chunk, ScoredChunk
from dashrag.errors import ConfigError

DEFAULTS = SelectionThresholds()


def frag(cid: int, doc: str, score: float, chars: int = 10) -> ScoredChunk:
    return ScoredChunk(Chunk(cid, doc, cid, "x" * chars), score, "rerank")


def documents_of(fragments) -> set[str]:
    return {f.document_id for f in fragments}


def test_defaults_are_the_reference_defaults():
    t = DEFAULTS
    assert (t.rerank_round_size, t.rerank_max_chars, t.min_score, t.fallback_top_n, t.min_documents,
            t.max_fragments, t.fill_up_target_fragments) == (5000, 24000, 0.10, 50, 5, 100, 10)


def test_fast_path_defaults_are_the_reference_cutoff_and_cap():
    assert (DEFAULTS.min_document_score, DEFAULTS.top_m) == (0.05, 1000)


def test_thresholds_refuse_a_fallback_larger_than_the_cap():
    with pytest.raises(ConfigError, match=r"fallback_top_n \(60\) must be <= max_fragments \(50\)"):
        SelectionThresholds(fallback_top_n=60, max_fragments=50)


def test_thresholds_refuse_non_positive_counts():
    with pytest.raises(ConfigError, match="top_m must be >= 1"):
        SelectionThresholds(top_m=0)


def test_aggregate_documents_max_pools():
    hits = aggregate_documents([frag(1, "a", 0.2), frag(2, "b", 0.5), frag(3, "a", 0.9), frag(4, "b", 0.1)])
    assert [(h.document_id, h.score, h.best.id, [f.id for f in h.fragments]) for h in hits] == [
        ("a", 0.9, 3, [3, 1]), ("b", 0.5, 2, [2, 4]),
    ]


# -- fast path ---------------------------------------------------------------------------------

def test_fast_path_drops_documents_below_the_document_score():
    t = SelectionThresholds(min_document_score=0.5)
    # document b's best fragment is 0.4: all of b goes; a's weak fragment stays with its document
    kept = fast_path_select([frag(1, "a", 0.9), frag(2, "a", 0.1), frag(3, "b", 0.4)], t)
    assert [f.id for f in kept] == [1, 2]


def test_fast_path_caps_fragments_per_document_best_first():
    t = SelectionThresholds(min_document_score=0.0, max_fragments_per_document=2)
    kept = fast_path_select([frag(i, "a", i / 10) for i in range(1, 6)] + [frag(9, "b", 0.35)], t)
    assert [f.id for f in kept] == [5, 4, 9]


def test_fast_path_keeps_the_global_top_m():
    t = SelectionThresholds(min_document_score=0.0, max_fragments_per_document=1, top_m=3)
    kept = fast_path_select([frag(i, f"d{i}", i / 10) for i in range(1, 8)], t)
    assert [f.id for f in kept] == [7, 6, 5]


# -- three tiers ---------------------------------------------------------------------------------

def test_tier_one_keeps_every_fragment_at_or_above_the_minimum():
    fragments = [frag(i, f"d{i % 3}", 0.1 + i / 1000) for i in range(60)] + [frag(500, "z", 0.0999)]
    selected, info = three_tier_select(fragments, DEFAULTS)
    assert (len(selected), 500 in {f.id for f in selected}, info["tier"]) == (60, False, "threshold")


def test_tier_one_is_capped_at_max_fragments_like_tier_two():
    fragments = [frag(i, f"d{i % 3}", 0.1 + i / 1000) for i in range(150)]
    selected, info = three_tier_select(fragments, DEFAULTS)
    assert (len(selected), info["qualified"], selected[0].id, selected[-1].id) == (100, 150, 149, 50)


def worked_example() -> list[ScoredChunk]:
    """The reference's example: 219 fragments, the best scoring 0.0237; the top 50 cycle through 8 documents,
    the other 169 belong to 20 others."""
    top = [frag(i, f"top{i % 8}", 0.0237 - i * 0.0001) for i in range(50)]
    rest = [frag(50 + i, f"low{i % 20}", 0.0187 - i * 0.0001) for i in range(169)]
    return top + rest


def test_worked_example_returns_the_top_fifty_covering_eight_documents():
    selected, info = three_tier_select(worked_example(), DEFAULTS)
    assert (len(selected), len(documents_of(selected)), info["tier"]) == (50, 8, "diversity")


def test_worked_example_document_aggregation_keeps_at_least_five_documents():
    selected, _ = three_tier_select(worked_example(), DEFAULTS)
    hits = select_documents(selected, DEFAULTS)
    assert [h.document_id for h in hits] == ["top0", "top1", "top2", "top3", "top4"]


def test_tier_two_adds_fragments_of_new_documents_until_enough_are_covered():
    top = [frag(i, f"d{i % 2}", 0.05 - i * 0.0001) for i in range(50)]                 # 2 documents
    rest = [frag(100 + i, f"d{i % 6}", 0.04 - i * 0.0001) for i in range(30)]          # d0..d5 in turn
    selected, info = three_tier_select(top + rest, DEFAULTS)
    # after the top 50 (d0, d1): skip 100 (d0) and 101 (d1), add 102 (d2), 103 (d3), 104 (d4)
    assert ([f.id for f in selected[50:]], info["documents"]) == ([102, 103, 104], 5)


def test_tier_two_stops_at_the_fragment_cap():
    t = SelectionThresholds(max_fragments=52)
    top = [frag(i, f"d{i % 2}", 0.05 - i * 0.0001) for i in range(50)]
    rest = [frag(100 + i, f"d{i % 6}", 0.04 - i * 0.0001) for i in range(30)]
    selected, _ = three_tier_select(top + rest, t)
    assert (len(selected), len(documents_of(selected))) == (52, 4)


def test_tier_two_with_fewer_fragments_than_the_top_n_returns_them_all():
    selected, _ = three_tier_select([frag(1, "a", 0.01), frag(2, "b", 0.02)], DEFAULTS)
    assert [f.id for f in selected] == [2, 1]


def test_nothing_in_nothing_out():
    selected, info = three_tier_select([], DEFAULTS)
    assert (selected, info["tier"], info["selected"], info["documents"]) == ([], "empty", 0, 0)


def test_document_selection_keeps_every_document_above_the_minimum():
    hits = select_documents([frag(i, f"d{i}", 0.2 + i / 100) for i in range(7)] + [frag(9, "low", 0.05)], DEFAULTS)
    assert len(hits) == 7 and "low" not in {h.document_id for h in hits}


def test_document_selection_tops_up_to_the_minimum_number_of_documents():
    fragments = [frag(1, "a", 0.5), frag(2, "b", 0.3), frag(3, "c", 0.05), frag(4, "d", 0.04), frag(5, "e", 0.03),
                 frag(6, "f", 0.02)]
    assert [h.document_id for h in select_documents(fragments, DEFAULTS)] == ["a", "b", "c", "d", "e"]


# -- fill-up ------------------------------------------------------------------------------------

def test_fill_up_counts_fragments_not_documents():
    selected = [frag(i, "a", 0.5) for i in range(4)]                                       # 4 fragments, 1 document
    below = [frag(100 + i, "a" if i % 2 else f"n{i}", 0.09 - i * 0.001) for i in range(10)]
    result, info = fill_up(selected, selected + below, DEFAULTS)
    assert ([f.id for f in result[4:]], info["fragments"]) == ([100, 101, 102, 103, 104, 105], 10)


def test_fill_up_does_nothing_at_ten_fragments_or_more():
    selected = [frag(i, "a", 0.5) for i in range(10)]
    result, info = fill_up(selected, selected + [frag(99, "b", 0.05)], DEFAULTS)
    assert (len(result), info["triggered"], info["added"]) == (10, False, 0)


def test_fill_up_only_uses_below_threshold_fragments():
    result, _ = fill_up([frag(1, "a", 0.5)], [frag(2, "b", 0.3), frag(3, "c", 0.05)], DEFAULTS)
    assert [f.id for f in result] == [1, 3]


def test_fill_up_respects_the_character_budget():
    t = SelectionThresholds(fill_up_max_chars=100)
    selected = [frag(1, "a", 0.5, chars=60)]
    below = [frag(2, "b", 0.09, chars=50), frag(3, "c", 0.08, chars=30), frag(4, "d", 0.07, chars=20)]
    result, info = fill_up(selected, below, t)
    # 60 + 50 > 100: skip 2; 60 + 30 = 90: take 3; 90 + 20 > 100: skip 4
    assert ([f.id for f in result], info["chars"], info["skipped_for_budget"]) == ([1, 3], 90, 2)


def test_fill_up_logs_once_when_it_triggers(caplog):
    with caplog.at_level(logging.INFO, logger="dashrag.boolean.selection"):
        fill_up([frag(1, "a", 0.5)], [frag(100 + i, f"n{i}", 0.05) for i in range(20)], DEFAULTS)
        fill_up([frag(i, "a", 0.5) for i in range(10)], [frag(99, "b", 0.05)], DEFAULTS)
    assert [r.getMessage() for r in caplog.records] == [
        "fill-up: 1 fragment(s) selected, fewer than 10; added 9 below-threshold candidate(s)"]


def test_fill_up_logs_only_when_it_adds_something(caplog):
    """Fragment service reference: triggered (fewer than 10) but nothing below the threshold to add: no log."""
    with caplog.at_level(logging.INFO, logger="dashrag.boolean.selection"):
        _, info = fill_up([frag(1, "a", 0.5)], [frag(2, "b", 0.3)], DEFAULTS)  # 0.3 is above the threshold
    assert (info["triggered"], info["added"]) == (True, 0)
    assert caplog.records == []
