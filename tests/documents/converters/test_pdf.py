import pytest

from dashrag.documents.converters import ConversionFailed, ReadLimits
from dashrag.documents.converters.pdf import convert_pdf
from tests.fixtures.documents import write_pdf, write_scanned_pdf


def test_pdf_text_is_read_page_by_page_with_its_title(tmp_path):
    path = write_pdf(tmp_path / "a.pdf", [["Methods", "BM25 ranks documents"], ["second page text"]], title="Report")
    converted = convert_pdf(path, ReadLimits())
    assert converted.pages == ("Methods\nBM25 ranks documents", "second page text")
    assert converted.title == "Report" and converted.paged
    assert converted.text == "Methods\nBM25 ranks documents\fsecond page text"


def test_pdf_without_a_title_is_titled_by_its_first_line(tmp_path):
    path = write_pdf(tmp_path / "a.pdf", [["", "Annual figures", "body"]])
    assert convert_pdf(path, ReadLimits()).title == "Annual figures"


def test_encrypted_pdf_fails_saying_so(tmp_path):
    path = write_pdf(tmp_path / "a.pdf", [["secret"]], encrypt="password")
    with pytest.raises(ConversionFailed, match="encrypted PDF"):
        convert_pdf(path, ReadLimits())


def test_scanned_pdf_without_text_layer_fails_saying_so(tmp_path):
    with pytest.raises(ConversionFailed, match="no text layer"):
        convert_pdf(write_scanned_pdf(tmp_path / "scan.pdf"), ReadLimits())


def test_corrupt_pdf_fails_saying_so(tmp_path):
    path = tmp_path / "a.pdf"
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog broken")
    with pytest.raises(ConversionFailed, match="not a readable PDF"):
        convert_pdf(path, ReadLimits())


def test_pdf_over_the_page_cap_fails_naming_the_cap(tmp_path):
    path = write_pdf(tmp_path / "a.pdf", [["one"], ["two"], ["three"]])
    with pytest.raises(ConversionFailed, match="3 pages, more than the cap of 2"):
        convert_pdf(path, ReadLimits(max_pages=2))
