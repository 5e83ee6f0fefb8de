import pytest

from dashrag.documents.converters import ConversionFailed, ReadLimits
from dashrag.documents.converters.html import convert_html
from tests.fixtures.documents import html_page

ARTICLE = ["The first paragraph of the article holds enough words to be read as the main content.",
           "A second paragraph continues the argument about retrieval with more words."]


def test_html_keeps_the_article_and_drops_navigation_and_footer(tmp_path):
    path = tmp_path / "a.html"
    path.write_text(html_page("Ranking notes", ARTICLE, heading="Details"), encoding="utf-8")
    converted = convert_html(path, ReadLimits())
    assert converted.title == "Ranking notes"
    assert ARTICLE[0] in converted.text and "## Details" in converted.text
    assert "About us" not in converted.text and "All rights reserved" not in converted.text


def test_html_in_an_unknown_declared_encoding_is_decoded_from_its_bytes(tmp_path):
    sentence = "Le caf\u00e9 est une boisson tr\u00e8s r\u00e9pandue, pr\u00e9par\u00e9e \u00e0 partir de graines."
    page = html_page("Caf\u00e9 notes", [sentence, sentence])
    path = tmp_path / "a.html"
    path.write_bytes(page.replace('charset="utf-8"', 'charset="x-no-such-encoding"').encode("latin-1"))
    converted = convert_html(path, ReadLimits())
    assert "Le caf\u00e9 est une boisson" in converted.text


def test_html_with_no_content_fails_saying_so(tmp_path):
    path = tmp_path / "a.html"
    path.write_text("<html><head><title>x</title></head><body><div></div></body></html>", encoding="utf-8")
    with pytest.raises(ConversionFailed, match="no main content"):
        convert_html(path, ReadLimits())
