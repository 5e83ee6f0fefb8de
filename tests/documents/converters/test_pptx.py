"""PPTX: one page per slide, its title a heading, its shapes in reading order (top to bottom); bad decks fail."""

import pytest

from dashrag.documents.converters import ConversionFailed, ReadLimits
from dashrag.documents.converters.pptx import convert_pptx
from tests.fixtures.documents import write_pptx, write_zip_bomb


def test_pptx_gives_a_page_per_slide_with_its_title_as_a_heading_in_reading_order(tmp_path):
    path = write_pptx(tmp_path / "deck.pptx", [("Okapi BM25", ["saturation of terms", "placed above"]),
                                               ("Fusion", ["reciprocal rank fusion"])])
    converted = convert_pptx(path, ReadLimits())
    assert converted.pages == ("## Okapi BM25\n\nplaced above\n\nsaturation of terms",
                               "## Fusion\n\nreciprocal rank fusion")
    assert converted.paged and converted.title == "Okapi BM25"  # no title property: the first slide's title
    assert convert_pptx(write_pptx(tmp_path / "t.pptx", [("A", ["b"])], title="Deck"), ReadLimits()).title == "Deck"


def test_corrupt_or_oversized_pptx_fails_saying_so(tmp_path):
    broken = tmp_path / "broken.pptx"
    broken.write_bytes(b"PK\x03\x04 not a zip at all")
    with pytest.raises(ConversionFailed, match="not a valid PPTX"):
        convert_pptx(broken, ReadLimits())
    with pytest.raises(ConversionFailed, match="a zip bomb"):
        convert_pptx(write_zip_bomb(tmp_path / "bomb.pptx", unpacked_mb=3), ReadLimits(max_unpacked_mb=2))
    with pytest.raises(ConversionFailed, match="3 slides, more than the cap of 2"):
        convert_pptx(write_pptx(tmp_path / "long.pptx", [("a", ["x"])] * 3), ReadLimits(max_pages=2))
