"""Step 10b: citations and low_confidence."""

from __future__ import annotations

from dashrag.service.citations import citations, cited_places, low_confidence


def test_citations_are_the_sorted_set_of_non_null_source_ids():
    assert citations(["d2", None, "d1", "d2", "d10"]) == ["d1", "d10", "d2"]


def test_low_confidence_exactly_when_nothing_is_kept():
    assert low_confidence([]) is True
    assert low_confidence([object()]) is False


def test_cited_places_are_each_kept_chunks_file_page_and_section_once_in_context_order():
    kept = [("r.pdf", {"path": "r.pdf", "page": 3, "pages": 9}), ("n.md", {"path": "n.md", "section": "A › B"}),
            ("r.pdf", {"path": "r.pdf", "page": 3}), ("r.pdf", {"path": "r.pdf", "page": 1}), (None, {"page": 2}),
            ("j", {"page": True, "section": 7})]  # a JSONL document: no path; values of other types are not places
    assert cited_places(kept) == [
        {"source_id": "r.pdf", "path": "r.pdf", "page": 3, "section": None},
        {"source_id": "n.md", "path": "n.md", "page": None, "section": "A › B"},
        {"source_id": "r.pdf", "path": "r.pdf", "page": 1, "section": None},
        {"source_id": "j", "path": None, "page": None, "section": None}]
