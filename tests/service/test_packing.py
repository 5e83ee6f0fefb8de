"""Step 10a: greedy packing into the character budget, exact cases and properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dashrag.service.packing import char_budget, pack


def lengths(kept: list[str]) -> list[int]:
    return [len(t) for t in kept]


def ident(text: str) -> str:
    return text


def test_the_budget_is_four_characters_a_token():
    assert char_budget(512) == 2048


def test_chunks_that_fit_exactly_are_all_kept():
    assert lengths(pack(["a" * 4, "b" * 6], 10, ident)) == [4, 6]


def test_packing_stops_before_the_first_chunk_over_budget_even_if_a_later_one_fits():
    assert lengths(pack(["a" * 4, "b" * 7, "c"], 10, ident)) == [4]


def test_the_top_chunk_is_kept_even_alone_over_budget():
    assert lengths(pack(["a" * 50, "b"], 10, ident)) == [50]


def test_empty_chunks_are_skipped_and_never_stop_packing():
    assert pack(["", "abc", "", "de"], 5, ident) == ["abc", "de"]
    assert lengths(pack(["", "a" * 20], 5, ident)) == [20]


def test_nothing_to_pack_packs_nothing():
    assert pack([], 10, ident) == [] and pack(["", ""], 10, ident) == []


texts = st.lists(st.text(alphabet="ab", max_size=40), max_size=20)


@given(texts, st.integers(min_value=0, max_value=120))
def test_packing_properties(items: list[str], budget: int):
    kept = pack(items, budget, ident)
    non_empty = [t for t in items if t]
    # the top non-empty chunk is always kept
    assert (kept[:1] == non_empty[:1])
    # the total never exceeds the budget, except for a lone top chunk over budget
    assert sum(map(len, kept)) <= budget or (len(kept) == 1 and len(kept[0]) > budget)
    # order is preserved: the kept chunks are a prefix of the non-empty ones
    assert kept == non_empty[:len(kept)]
    # greedy: the next chunk, if any, would not have fitted
    if len(kept) < len(non_empty):
        assert sum(map(len, kept)) + len(non_empty[len(kept)]) > budget
