"""documents/changes.py: what counts as the same document when a tree is updated."""

from __future__ import annotations

from dashrag.documents.changes import document_digest
from dashrag.documents.model import SourceDocument


def test_identical_documents_with_any_json_metadata_have_one_digest():
    metadata = {"year": 2015, "retracted": False, "tags": ["chem", "bio"], "lang": ("en",)}
    first = SourceDocument("a", "text", "title", dict(metadata), source="one/path")
    again = SourceDocument("a", "text", "title", dict(reversed(list(metadata.items()))), source="another/path")
    assert document_digest(first) == document_digest(again)


def test_a_changed_metadata_value_changes_the_digest():
    before = SourceDocument("a", "text", metadata={"year": 2015})
    after = SourceDocument("a", "text", metadata={"year": 2016})
    assert document_digest(before) != document_digest(after)


def test_a_file_touched_but_unchanged_has_the_same_digest(tmp_path):
    import os

    from dashrag import Corpus
    from dashrag.documents.changes import document_digest

    path = tmp_path / "a.md"
    path.write_text("# A\n\nbody", encoding="utf-8")
    (before,) = Corpus.from_folder(tmp_path).documents
    os.utime(path, (1_700_000_000, 1_700_000_000))
    (after,) = Corpus.from_folder(tmp_path).documents
    assert before.metadata["modified"] != after.metadata["modified"]
    assert document_digest(before) == document_digest(after)
    path.write_text("# A\n\nother body", encoding="utf-8")
    (changed,) = Corpus.from_folder(tmp_path).documents
    assert document_digest(changed) != document_digest(before)
