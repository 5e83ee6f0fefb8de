import pytest

from dashrag.documents.converters import ConversionFailed, ReadLimits
from dashrag.documents.converters.docx import convert_docx
from tests.fixtures.documents import write_docx, write_zip_bomb


def test_docx_keeps_headings_paragraphs_and_tables_in_order(tmp_path):
    path = write_docx(tmp_path / "a.docx", [("h1", "Methods"), ("p", "We counted."), ("h2", "Sampling"),
                                            ("p", "At random.")], table=[["site", "n"], ["north", "12"]])
    converted = convert_docx(path, ReadLimits())
    assert converted.text == "# Methods\n\nWe counted.\n\n## Sampling\n\nAt random.\n\nsite | n\nnorth | 12"
    assert converted.title == "Methods"  # no title property: the first heading


def test_docx_title_property_wins_over_the_first_heading(tmp_path):
    path = write_docx(tmp_path / "a.docx", [("h1", "Methods"), ("p", "x")], title="Field report")
    assert convert_docx(path, ReadLimits()).title == "Field report"


def test_corrupt_docx_fails_saying_so(tmp_path):
    path = tmp_path / "a.docx"
    path.write_bytes(b"PK\x03\x04 this is not really a zip")
    with pytest.raises(ConversionFailed, match="not a valid DOCX"):
        convert_docx(path, ReadLimits())


def test_zip_bomb_is_refused_before_unpacking(tmp_path):
    path = write_zip_bomb(tmp_path / "bomb.docx", unpacked_mb=3)
    assert path.stat().st_size < 100_000
    with pytest.raises(ConversionFailed, match="unpacks to 3 MiB, more than the cap of 2 MiB"):
        convert_docx(path, ReadLimits(max_unpacked_mb=2))
