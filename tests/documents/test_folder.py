"""A user's folder: every format read with the metadata the file gives, every bad file one line, the rest read."""

import logging
import os

import pytest

from dashrag import Corpus
from dashrag.documents.converters import ReadLimits
from dashrag.errors import CorpusError
from tests.fixtures.documents import html_page, write_docx, write_pdf, write_scanned_pdf, write_zip_bomb

ARTICLE = ["The first paragraph of the article holds enough words to be read as the main content.",
           "A second paragraph continues the argument about retrieval with more words."]


def make_good_folder(folder):
    write_pdf(folder / "report.pdf", [["Quarterly report", "okapi ranking"], ["page two: fusion"]], title="Q3")
    write_docx(folder / "notes.docx", [("h1", "Notes"), ("p", "dense embeddings")])
    (folder / "web").mkdir()
    (folder / "web" / "page.html").write_text(html_page("Web page", ARTICLE), encoding="utf-8")
    (folder / "bm25.md").write_text("# BM25\n\nterm frequency saturation", encoding="utf-8")
    (folder / "plain.txt").write_text("just text", encoding="utf-8")
    return folder


def make_bad_files(folder):
    write_pdf(folder / "locked.pdf", [["secret"]], encrypt="pw")
    write_scanned_pdf(folder / "scan.pdf")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 nothing more")
    (folder / "broken.docx").write_bytes(b"not a zip")
    write_zip_bomb(folder / "bomb.docx", unpacked_mb=3)
    (folder / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0 jpeg")


def test_every_format_is_read_with_the_metadata_its_file_gives(tmp_path):
    corpus = Corpus.from_folder(make_good_folder(tmp_path))
    by_id = {d.id: d for d in corpus}
    assert sorted(by_id) == ["bm25.md", "notes.docx", "plain.txt", "report.pdf", "web/page.html"]
    assert {i: d.metadata["file_type"] for i, d in by_id.items()} == {
        "bm25.md": "md", "notes.docx": "docx", "plain.txt": "txt", "report.pdf": "pdf", "web/page.html": "html"}
    assert {i: d.metadata["title"] for i, d in by_id.items()} == {
        "bm25.md": "BM25", "notes.docx": "Notes", "plain.txt": "", "report.pdf": "Q3", "web/page.html": "Web page"}
    pdf = by_id["report.pdf"]
    assert pdf.metadata["pages"] == 2 and pdf.metadata["path"] == "report.pdf"
    assert pdf.text == "Quarterly report\nokapi ranking\fpage two: fusion"
    assert "okapi" in pdf.text and "dense embeddings" in by_id["notes.docx"].text


def test_modified_is_the_mtime_and_sha256_the_bytes(tmp_path):
    import hashlib

    path = tmp_path / "a.txt"
    path.write_text("body", encoding="utf-8")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    (doc,) = Corpus.from_folder(tmp_path).documents
    assert doc.metadata["modified"] == "2023-11-14T22:13:20Z"
    assert doc.metadata["sha256"] == hashlib.sha256(b"body").hexdigest()


def test_bad_files_get_one_line_each_and_the_rest_is_read(tmp_path, caplog):
    make_good_folder(tmp_path)
    make_bad_files(tmp_path)
    with caplog.at_level(logging.WARNING):
        corpus = Corpus.from_folder(tmp_path, limits=ReadLimits(max_unpacked_mb=2))
    assert len(corpus) == 5
    failed = {line.split(": ", 1)[0].rsplit("/", 1)[1]: line.split(": ", 1)[1] for line in corpus.failed}
    assert sorted(failed) == ["bomb.docx", "broken.docx", "broken.pdf", "locked.pdf", "scan.pdf"]
    assert "encrypted" in failed["locked.pdf"] and "no text layer" in failed["scan.pdf"]
    assert "zip bomb" in failed["bomb.docx"] and "not a valid DOCX" in failed["broken.docx"]
    assert [s.rsplit("/", 1)[1] for s in corpus.skipped] == ["photo.jpg: unknown file type '.jpg'"]
    assert corpus.summary() == "read 5 documents, skipped 1, failed 5"
    for name in failed:
        assert sum(name in r.getMessage() for r in caplog.records) == 1


def test_strict_turns_a_failed_file_into_an_error(tmp_path):
    make_good_folder(tmp_path)
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 nothing more")
    with pytest.raises(CorpusError, match=r"1 file\(s\) could not be read \(--strict\).*broken.pdf"):
        Corpus.from_folder(tmp_path, strict=True)


def test_strict_lets_skipped_files_pass(tmp_path):
    make_good_folder(tmp_path)
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8")
    assert len(Corpus.from_folder(tmp_path, strict=True)) == 5


def test_a_slow_file_is_stopped_by_the_timeout_and_the_next_one_read(tmp_path):
    write_pdf(tmp_path / "a.pdf", [["first"]])
    write_pdf(tmp_path / "b.pdf", [["second"]])
    (tmp_path / "c.txt").write_text("third", encoding="utf-8")
    # 1 ms is less than starting the converter process takes: each PDF outlives its timeout
    corpus = Corpus.from_folder(tmp_path, limits=ReadLimits(timeout_s=0.001))
    assert [d.id for d in corpus] == ["c.txt"]
    assert all("took longer than 0.001s" in line for line in corpus.failed) and len(corpus.failed) == 2


def test_a_file_over_the_size_cap_fails_unread(tmp_path):
    (tmp_path / "big.txt").write_text("x" * 2_000_000, encoding="utf-8")
    (tmp_path / "small.txt").write_text("fine", encoding="utf-8")
    corpus = Corpus.from_folder(tmp_path, limits=ReadLimits(max_file_mb=1))
    assert [d.id for d in corpus] == ["small.txt"]
    assert "more than the cap of 1 MiB" in corpus.failed[0]


def test_hidden_files_and_the_sidecar_are_no_documents_and_no_noise(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nbody", encoding="utf-8")
    (tmp_path / ".DS_Store").write_bytes(b"\0\0")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref", encoding="utf-8")
    (tmp_path / "metadata.jsonl").write_text('{"file": "a.md", "metadata": {"year": 2020}}\n', encoding="utf-8")
    corpus = Corpus.from_folder(tmp_path)
    assert [d.id for d in corpus] == ["a.md"] and not corpus.skipped and not corpus.failed
