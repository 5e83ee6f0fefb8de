"""Pages and sections read back from a converted text: by file type, headings outside code fences, paths."""

from dashrag.documents.structure import structure_of

DOCUMENT = ("# Report\n\nintro\n\n## Methods\n\n### Sampling\n\nmice\n\n```\n# not a heading\n```\n\n"
            "## Results #\n\nfound")


def test_headings_give_each_offset_its_heading_path():
    structure = structure_of(DOCUMENT, {"file_type": "md"})
    assert structure.fields_at(DOCUMENT.index("intro")) == {"section": "Report"}
    assert structure.fields_at(DOCUMENT.index("mice")) == {"section": "Report › Methods › Sampling"}
    assert structure.fields_at(DOCUMENT.index("# not")) == {"section": "Report › Methods › Sampling"}  # fenced
    assert structure.fields_at(DOCUMENT.index("found")) == {"section": "Report › Results"}  # closing #s dropped


def test_text_before_the_first_heading_has_no_section():
    text = "preface\n\n# One\n\nbody"
    structure = structure_of(text, {"file_type": "docx"})
    assert structure.fields_at(0) == {}
    assert structure.boundaries == [text.index("# One")]


def test_form_feeds_are_pdf_pages_one_based():
    text = "first page\fsecond page\f\fafter an empty page"
    structure = structure_of(text, {"file_type": "pdf"})
    assert structure.fields_at(0) == {"page": 1}
    assert structure.fields_at(text.index("second")) == {"page": 2}
    assert structure.fields_at(text.index("after")) == {"page": 4}
    assert structure_of("one page only", {"file_type": "pdf"}).fields_at(3) == {"page": 1}


def test_documents_without_a_structured_type_have_none():
    """A BEIR abstract, a .txt file: a leading # or a form feed is their text, not a heading or a page."""
    for metadata in ({}, {"file_type": "txt"}, {"title": "x"}):
        structure = structure_of("# 1 reason\fmore", metadata)
        assert structure.fields_at(5) == {} and structure.boundaries == []
    assert structure_of("# heading\fpage", {"file_type": "pdf"}).heading_starts == ()


def test_a_heading_right_after_a_page_break_is_a_heading():
    text = "## Okapi\n\nterms\f## Fusion\n\nranks"
    structure = structure_of(text, {"file_type": "pptx"})
    assert structure.fields_at(text.index("ranks")) == {"page": 2, "section": "Fusion"}
