"""Step 10b: citations and low_confidence."""

from __future__ import annotations

from dashrag.service.citations import citations, low_confidence


def test_citations_are_the_sorted_set_of_non_null_source_ids():
    assert citations(["d2", None, "d1", "d2", "d10"]) == ["d1", "d10", "d2"]


def test_low_confidence_exactly_when_nothing_is_kept():
    assert low_confidence([]) is True
    assert low_confidence([object()]) is False
