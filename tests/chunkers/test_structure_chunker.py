"""The structure-aware chunker: a chunk starts at every page and section, records them, and cuts the rest as the
recursive chunker does (the default chunker, so a corpus without structure is chunked as before)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag import build_component
from dashrag.api import DEFAULT_CHUNKER
from dashrag.documents.model import SourceDocument


def chunker(size=2000, overlap=200):
    return build_component({"component": "StructureChunker", "params": {"chunk_size": size, "chunk_overlap": overlap}})


def recursive(size=2000, overlap=200):
    return build_component({"component": "RecursiveCharacterChunker",
                            "params": {"chunk_size": size, "chunk_overlap": overlap}})


def test_it_is_the_default_chunker():
    assert DEFAULT_CHUNKER["component"] == "StructureChunker"


def test_every_section_starts_a_chunk_and_records_its_heading_path():
    text = "# Guide\n\n## Methods\n\n### Sampling\n\nwe sampled mice\n\n## Results\n\nthey ran"
    chunks = chunker().chunk([SourceDocument("g.md", text, metadata={"file_type": "md", "path": "g.md"})])
    assert [(c.text, dict(c.fields)) for c in chunks] == [
        ("# Guide\n\n## Methods\n\n### Sampling\n\nwe sampled mice\n\n", {"section": "Guide › Methods › Sampling"}),
        ("## Results\n\nthey ran", {"section": "Guide › Results"}),
    ]
    assert all(c.metadata == {"file_type": "md", "path": "g.md"} for c in chunks)  # the document's, unchanged
    assert chunks[1].all_metadata == {"file_type": "md", "path": "g.md", "section": "Guide › Results"}


def test_every_pdf_page_starts_a_chunk_and_a_long_page_is_cut_by_size():
    long_page = " ".join(f"word{i}" for i in range(40))  # 309 characters
    text = f"short first page\f{long_page}\fthird"
    chunks = chunker(100, 20).chunk([SourceDocument("r.pdf", text, metadata={"file_type": "pdf"})])
    assert [c.fields["page"] for c in chunks] == [1] + [2] * (len(chunks) - 2) + [3]
    assert all("\f" not in c.text and len(c.text) <= 100 for c in chunks)
    assert all(text[c.start:c.end] == c.text for c in chunks)
    page_two = [c for c in chunks if c.fields["page"] == 2]
    assert len(page_two) >= 4 and page_two[1].start < page_two[0].end  # the overlap inside a page


structured = st.lists(st.sampled_from(["# A\n\n", "## B\n\n", "text here. ", "more\n\n", "\f", "x" * 30]),
                      max_size=40).map("".join)


@settings(max_examples=120, deadline=None)
@given(structured, st.sampled_from(["md", "pdf", "pptx", "txt", None]), st.integers(10, 80))
def test_chunks_lie_in_the_text_in_order_within_one_page_and_size(text, file_type, size):
    metadata = {} if file_type is None else {"file_type": file_type}
    chunks = chunker(size, size // 5).chunk([SourceDocument("d", text, metadata=metadata)])
    assert all(text[c.start:c.end] == c.text and c.end - c.start <= size for c in chunks)
    covered = {i for c in chunks for i in range(c.start, c.end)}
    assert {i for i, ch in enumerate(text) if not ch.isspace()} <= covered  # no text is lost
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert all(a.start < b.start for a, b in zip(chunks, chunks[1:]))
    if file_type in ("pdf", "pptx"):
        assert all("\f" not in c.text for c in chunks)
        assert all(c.fields["page"] == text.count("\f", 0, c.start + len(c.text) - len(c.text.lstrip())) + 1
                   for c in chunks)
    if file_type in ("txt", None):
        assert all(not c.fields for c in chunks)


@settings(max_examples=80, deadline=None)
@given(structured, st.integers(10, 80))
def test_a_text_without_structure_is_cut_as_the_recursive_chunker_cuts_it(text, size):
    document = [SourceDocument("d", text, metadata={"file_type": "txt"})]
    mine, theirs = chunker(size, size // 4).chunk(document), recursive(size, size // 4).chunk(document)
    assert [(c.start, c.end, c.text) for c in mine] == [(c.start, c.end, c.text) for c in theirs]


def test_contextual_chunks_begin_with_the_title_and_section_path():
    text = "# Guide\n\n## Methods\n\n" + "mice were sampled. " * 8 + "\n\n## Results\n\nthey ran"
    document = SourceDocument("g.md", text, metadata={"file_type": "md", "title": "Guide"})
    contextual = build_component({"component": "StructureChunker",
                                  "params": {"chunk_size": 80, "chunk_overlap": 0, "contextual": True}})
    plain = chunker(80, 0).chunk([document])
    chunks = contextual.chunk([document])
    assert [c.text for c in chunks] == [f"Guide › {c.fields['section'].split(' › ', 1)[1]}\n\n{c.text}"
                                        for c in plain]  # the title once, though it is the first heading too
    assert chunks[-1].text == "Guide › Results\n\n## Results\n\nthey ran"
    assert [(c.start, c.end, c.fields) for c in chunks] == [(c.start, c.end, c.fields) for c in plain]
    untitled = contextual.chunk([SourceDocument("t.txt", "plain text", metadata={"file_type": "txt"})])
    assert [c.text for c in untitled] == ["plain text"]  # no title, no section: nothing to add
