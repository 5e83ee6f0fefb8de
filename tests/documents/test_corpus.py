import gzip
import logging

import pytest

from dashrag import Corpus
from dashrag.documents.folder import READ_FIELDS
from dashrag.documents.model import normalise_categories
from dashrag.errors import CorpusError


def test_folder_reads_txt_and_md_with_relative_ids(example_corpus):
    ids = [d.id for d in example_corpus]
    assert "bm25.md" in ids and "chunking.txt" in ids and len(ids) == 8


def test_non_utf8_file_fails_with_a_warning_naming_it(tmp_path, caplog):
    (tmp_path / "good.txt").write_text("fine text", encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes("caf\xe9 latin-1".encode("latin-1"))
    with caplog.at_level(logging.WARNING):
        corpus = Corpus.from_folder(tmp_path)
    assert [d.id for d in corpus] == ["good.txt"]
    assert "bad.txt" in caplog.text and "not UTF-8" in caplog.text
    assert any("bad.txt" in s for s in corpus.failed) and not corpus.skipped


def test_empty_folder_is_an_error(tmp_path):
    with pytest.raises(CorpusError, match="empty"):
        Corpus.from_path(tmp_path)


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(CorpusError, match="no such file or folder"):
        Corpus.from_path(tmp_path / "missing")


def test_beir_jsonl_gz_keeps_the_whole_metadata_object(tmp_path):
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(
            '{"_id": "a", "title": "T", "text": "body", '
            '"metadata": {"LANG": "en", "TAGS": ["x", "y"], "ev": [{"s": 1}], "year": 2019, "ok": true}}\n'
        )
    (doc,) = Corpus.from_path(tmp_path).documents
    assert doc.metadata == {"LANG": "en", "TAGS": ["x", "y"], "ev": [{"s": 1}], "year": 2019, "ok": True}
    assert normalise_categories(doc.metadata) == {"LANG": ("en",), "TAGS": ("x", "y")}
    assert doc.title == "T"


@pytest.mark.parametrize("metadata, message", [('"x"', "must be a JSON object, not str"),
                                               ('[1]', "must be a JSON object, not list")])
def test_metadata_that_is_not_an_object_names_the_line(tmp_path, metadata, message):
    path = tmp_path / "c.jsonl"
    path.write_text('{"_id": "a", "text": "x", "metadata": ' + metadata + '}\n')
    with pytest.raises(CorpusError, match=f"c.jsonl:1: metadata {message}"):
        Corpus.from_jsonl(path)


def test_bad_jsonl_line_names_file_and_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n{oops\n')
    with pytest.raises(CorpusError, match=r"c.jsonl:2: not valid JSON"):
        Corpus.from_jsonl(path)


def test_sidecar_categories_become_metadata(tmp_path):
    (tmp_path / "a.txt").write_text("asylum text")
    (tmp_path / "metadata.jsonl").write_text('{"file": "a.txt", "categories": {"COUNTRY": ["IQ", "SY"]}}\n')
    (doc,) = Corpus.from_folder(tmp_path).documents
    assert doc.metadata["COUNTRY"] == ["IQ", "SY"] and doc.metadata["path"] == "a.txt"


def test_sidecar_metadata_and_categories_are_merged(tmp_path):
    (tmp_path / "a.txt").write_text("asylum text")
    (tmp_path / "metadata.jsonl").write_text(
        '{"file": "a.txt", "categories": {"COUNTRY": "IQ"}, "metadata": {"year": 2020, "published": "2020-05-01"}}\n')
    (doc,) = Corpus.from_folder(tmp_path).documents
    sidecar = {k: v for k, v in doc.metadata.items() if k not in READ_FIELDS}
    assert sidecar == {"year": 2020, "published": "2020-05-01", "COUNTRY": "IQ"}


def test_a_field_in_both_sidecar_objects_is_an_error(tmp_path):
    (tmp_path / "a.txt").write_text("asylum text")
    (tmp_path / "metadata.jsonl").write_text('{"file": "a.txt", "categories": {"A": "x"}, "metadata": {"A": 1}}\n')
    with pytest.raises(CorpusError, match=r"metadata.jsonl:1: 'A' is given in both"):
        Corpus.from_folder(tmp_path)


def test_scifact_reads_every_document(scifact_dir):
    assert len(Corpus.from_beir(scifact_dir)) == 5183


def test_a_sidecar_line_for_a_file_that_is_no_document_is_listed_in_skipped_with_its_line(tmp_path, caplog):
    (tmp_path / "a.txt").write_text("asylum text")
    (tmp_path / "metadata.jsonl").write_text('{"file": "a.txt", "metadata": {"year": 2020}}\n'
                                             '{"file": "b.pdf", "metadata": {"year": 2021}}\n')
    with caplog.at_level(logging.WARNING):
        corpus = Corpus.from_folder(tmp_path)
    assert [d.metadata["year"] for d in corpus] == [2020]
    assert corpus.skipped == (f"{tmp_path / 'metadata.jsonl'}:2: names 'b.pdf', which is not a document "
                              f"of {tmp_path}",)
    assert "names 'b.pdf'" in caplog.text


def test_strict_refuses_a_sidecar_line_for_a_file_that_is_no_document(tmp_path):
    (tmp_path / "a.txt").write_text("asylum text")
    (tmp_path / "metadata.jsonl").write_text('{"file": "A.txt", "metadata": {"year": 2020}}\n')
    with pytest.raises(CorpusError, match=r"metadata.jsonl:1: names 'A.txt'"):
        Corpus.from_path(tmp_path, strict=True)
