"""Store deltas (store/segments.py, docs/scale.md "Store deltas"): an update that adds documents writes a delta over
the old store file, which becomes its base and is never changed; every reader sees the two as one corpus, a kept
reader keeps answering; a removed or replaced base document is hidden by the delta, and a purge (or a delta grown too
large, its hidden text counted) writes a whole file again.

The exactness of updated trees over deltas is the property of tests/core/test_updating.py (its adds now go to
deltas); here: the files, the readers and the failures."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

import dashrag
from dashrag.core.persistence import read_manifest
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import Chunk, SourceDocument
from dashrag.errors import PersistenceError
from dashrag.store import segments
from dashrag.store.store import Store
from tests.conftest import EXAMPLE_CORPUS
from tests.fixtures.removed_text import example_sentence, files_holding

KEYWORD = "keyword"
QUERIES = ["sparse postings of an inverted index", "dense vectors", "how are chunks cut", "BM25 saturation"]
NEW = [SourceDocument(id="postings.txt", text="An inverted index keeps sparse postings lists per term."),
       SourceDocument(id="vectors.txt", text="Dense vectors sit in an HNSW graph for approximate search.",
                      metadata={"year": 2026})]
MORE = [SourceDocument(id="late.txt", text="A late addition about BM25 saturation and term frequency.")]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("segments")
    dashrag.build(KEYWORD, EXAMPLE_CORPUS, out / "work").save(out / "saved")
    return out / "saved"


@pytest.fixture(autouse=True)
def deltas_kept(monkeypatch):
    """The example corpus's store is a few pages, so a delta passes its bound (a 64th of its base) at once and the next
    update would compact it: here a delta is never past its bound unless a test says so."""
    monkeypatch.setattr(segments, "COMPACT_FRACTION", 0)


@pytest.fixture
def tree(built, tmp_path) -> Path:
    shutil.copytree(built, tmp_path / "tree")
    return tmp_path / "tree"


def stores(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("store-*.sqlite"))


def named_store(folder: Path) -> Path:
    return folder / read_manifest(folder)["store"]


def answers(folder: Path) -> list:
    tree = dashrag.load(folder)
    try:
        return [[(c.document_id, c.chunk.position, round(c.score, 5), c.chunk.text) for c in tree.retrieve(q)[0]]
                for q in QUERIES]
    finally:
        tree.close()


def rebuilt(documents: list[SourceDocument], tmp_path: Path) -> list:
    dashrag.build(KEYWORD, Corpus(documents=tuple(documents)), tmp_path / "re-work").save(tmp_path / "re")
    return answers(tmp_path / "re")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_add_writes_a_delta_over_the_untouched_old_store_and_answers_as_a_rebuild(tree, tmp_path):
    old = named_store(tree)
    before = sha(old)
    dashrag.update(tree, add=NEW)
    delta = named_store(tree)
    assert segments.base_of(delta) == old and sha(old) == before
    assert stores(tree) == sorted([old.name, delta.name])
    with sqlite3.connect(delta) as connection:  # its own rows: the added ones, not a copy of the corpus
        assert connection.execute("SELECT id FROM documents ORDER BY ordinal").fetchall() == [(d.id,) for d in NEW]
    connection.close()
    example = list(Corpus.from_path(EXAMPLE_CORPUS).documents)
    assert answers(tree) == rebuilt(example + NEW, tmp_path)


def test_a_second_add_replaces_the_delta_and_keeps_the_base(tree, tmp_path):
    dashrag.update(tree, add=NEW)
    first = named_store(tree)
    base = segments.base_of(first)
    dashrag.update(tree, add=MORE)
    second = named_store(tree)
    assert segments.base_of(second) == base and not first.exists()
    assert stores(tree) == sorted([second.name, segments.base_of(second).name])
    example = list(Corpus.from_path(EXAMPLE_CORPUS).documents)
    assert answers(tree) == rebuilt(example + NEW + MORE, tmp_path)


def test_the_store_reader_lists_a_delta_in_corpus_order(tree):
    dashrag.update(tree, add=NEW)
    store = Store(f"sqlite:///{named_store(tree)}", read_only=True)
    try:
        ids = [d.id for d in store.read_documents()]
        example = [d.id for d in Corpus.from_path(EXAMPLE_CORPUS).documents]
        assert ids == example + ["postings.txt", "vectors.txt"]
        total, page = store.document_page(len(example) - 1, 2)
        assert total == len(example) + 2 and [d.id for d in page] == [example[-1], "postings.txt"]
        assert store.documents_with_ids(["vectors.txt"])["vectors.txt"].metadata == {"year": 2026}
    finally:
        store.close()


def test_removing_a_document_of_the_delta_keeps_a_delta(tree):
    dashrag.update(tree, add=NEW)
    base = segments.base_of(named_store(tree))
    dashrag.update(tree, remove=["postings.txt"])
    assert segments.base_of(named_store(tree)) == base
    assert not any(b"sparse postings lists" in p.read_bytes() for p in tree.rglob("*") if p.is_file())


def test_removing_a_base_document_hides_it_in_a_delta_and_answers_as_a_rebuild(tree, tmp_path):
    old = named_store(tree)
    before = sha(old)
    dashrag.update(tree, add=NEW)
    dashrag.update(tree, remove=["bm25.md"])
    delta = named_store(tree)
    assert segments.base_of(delta) == old and sha(old) == before and stores(tree) == sorted([old.name, delta.name])
    store = Store(f"sqlite:///{delta}", read_only=True)
    try:
        assert "bm25.md" not in {d.id for d in store.read_documents()} and not store.documents_with_ids(["bm25.md"])
        assert all(c.document_id != "bm25.md" for c in store.read_chunk_set().chunks)  # the rows, not the columns
    finally:
        store.close()
    example = [d for d in Corpus.from_path(EXAMPLE_CORPUS).documents if d.id != "bm25.md"]
    assert answers(tree) == rebuilt(example + NEW, tmp_path)
    assert files_holding(tree, example_sentence("bm25.md")) == [old]  # its text: in the untouched base alone


def test_a_hidden_document_can_come_back_and_go_again(tree, tmp_path):
    again = SourceDocument(id="bm25.md", text="BM25, rewritten: saturation of term frequency, length normalisation.")
    dashrag.update(tree, remove=["bm25.md"])
    dashrag.update(tree, add=[again])
    example = [d for d in Corpus.from_path(EXAMPLE_CORPUS).documents if d.id != "bm25.md"]
    assert answers(tree) == rebuilt(example + [again], tmp_path / "back")
    dashrag.update(tree, remove=["bm25.md"])
    assert answers(tree) == rebuilt(example, tmp_path / "gone")
    assert segments.base_of(named_store(tree)) is not None


def test_a_purge_writes_a_whole_file_and_every_hidden_text_leaves_the_folder(tree):
    dashrag.update(tree, add=NEW)
    dashrag.update(tree, remove=["bm25.md"])  # hidden, its text in the base
    dashrag.update(tree, remove=["chunking.txt"], purge=True)
    assert segments.base_of(named_store(tree)) is None and stores(tree) == [named_store(tree).name]
    assert not any(files_holding(tree, example_sentence(d)) for d in ("bm25.md", "chunking.txt"))
    assert {h[0] for a in answers(tree) for h in a} >= {"postings.txt", "vectors.txt"}


def test_the_text_a_delta_hides_is_counted_toward_its_bound_and_leaves_at_the_compaction(tree, monkeypatch):
    store = Store(f"sqlite:///{named_store(tree)}", read_only=True)
    try:
        document = store.documents_with_ids(["bm25.md"])["bm25.md"]
        chunks = [c.text for c in store.read_chunk_set().chunks if c.document_id == "bm25.md"]
    finally:
        store.close()
    dashrag.update(tree, remove=["bm25.md"])
    connection = sqlite3.connect(named_store(tree))
    try:
        segments.attach_base(connection, uri=False)
        assert segments.hidden_text_bytes(connection) == len(document.text.encode()) + sum(len(t.encode())
                                                                                          for t in chunks)
    finally:
        connection.close()
    monkeypatch.setattr(segments, "COMPACT_FRACTION", 10**9)  # past the bound: the next update compacts
    dashrag.update(tree, add=MORE)
    assert segments.base_of(named_store(tree)) is None and not files_holding(tree, example_sentence("bm25.md"))


def test_an_older_dashrag_cannot_read_the_base_name_of_a_delta_that_hides_documents(tree):
    """An older dashrag reads ``SELECT name FROM segment_base`` and would show the hidden documents again: the
    column is renamed, so it fails with its 'cannot read the store' error instead."""
    dashrag.update(tree, add=NEW)
    with sqlite3.connect(named_store(tree)) as connection:
        assert connection.execute("SELECT name FROM segment_base").fetchone()  # adds alone: readable as before
    connection.close()
    dashrag.update(tree, remove=["bm25.md"])
    with sqlite3.connect(named_store(tree)) as connection, pytest.raises(sqlite3.OperationalError, match="name"):
        connection.execute("SELECT name FROM segment_base")
    connection.close()


def test_a_delta_grown_past_its_bound_is_compacted_and_a_reader_loaded_before_keeps_answering(tree, monkeypatch):
    dashrag.update(tree, add=NEW)
    reader = dashrag.load(tree)
    try:
        before = [[(c.document_id, c.chunk.text) for c in reader.retrieve(q)[0]] for q in QUERIES]
        monkeypatch.setattr(segments, "COMPACT_FRACTION", 10**9)  # any delta is past its bound
        old_base = segments.base_of(named_store(tree))
        dashrag.update(tree, add=MORE)
        assert segments.base_of(named_store(tree)) is None and not old_base.exists()  # whole again; the base left
        assert [[(c.document_id, c.chunk.text) for c in reader.retrieve(q)[0]] for q in QUERIES] == before
    finally:
        reader.close()
    assert "late.txt" in {h[0] for a in answers(tree) for h in a}


def test_a_tree_on_a_delta_saved_elsewhere_takes_a_whole_store(tree, tmp_path):
    dashrag.update(tree, add=NEW)
    loaded = dashrag.load(tree)
    try:
        loaded.save(tmp_path / "elsewhere")
    finally:
        loaded.close()
    assert segments.base_of(named_store(tmp_path / "elsewhere")) is None
    assert answers(tmp_path / "elsewhere") == answers(tree)


def test_a_delta_whose_base_is_missing_is_a_clear_error(tree):
    dashrag.update(tree, add=NEW)
    segments.base_of(named_store(tree)).unlink()
    with pytest.raises(PersistenceError, match="base file of the delta store .* is missing"):
        dashrag.load(tree)


def test_a_delta_whose_base_was_edited_is_refused_as_another_corpus(tree):
    dashrag.update(tree, add=NEW)
    base = segments.base_of(named_store(tree))
    with sqlite3.connect(base) as connection:
        connection.execute("UPDATE chunks SET text = text || ' (edited)' WHERE id = (SELECT min(id) FROM chunks)")
    connection.close()
    with pytest.raises(PersistenceError, match="another corpus"):
        dashrag.load(tree)


def test_a_delta_refuses_a_chunk_id_not_above_its_base(tree, tmp_path):
    from dashrag.store.store import write_changed_store_file

    old = named_store(tree)
    with pytest.raises(PersistenceError, match="cannot be written: the chunk id 0 is not above"):
        write_changed_store_file(old, tree / "store-ffffffffffffffff.sqlite", [], NEW[:1],
                                 [Chunk(id=0, document_id="postings.txt", position=0, text=NEW[0].text, start=0,
                                        end=len(NEW[0].text))],
                                 "f" * 64)
    assert not (tree / "store-ffffffffffffffff.sqlite").exists() and not list(tree.glob(".store-*"))


def test_a_delta_refuses_a_document_its_base_holds_unless_it_hides_it(tree):
    from dashrag.store.store import write_changed_store_file

    old = named_store(tree)
    again = SourceDocument(id="bm25.md", text="BM25, rewritten.")
    chunk = Chunk(id=10**6, document_id="bm25.md", position=0, text=again.text, start=0, end=len(again.text))
    with pytest.raises(PersistenceError, match="cannot be written: the document 'bm25.md' is there already"):
        write_changed_store_file(old, tree / "store-ffffffffffffffff.sqlite", [], [again], [chunk], "f" * 64)
    assert not (tree / "store-ffffffffffffffff.sqlite").exists() and not list(tree.glob(".store-*"))
    write_changed_store_file(old, tree / "store-eeeeeeeeeeeeeeee.sqlite", ["bm25.md"], [again], [chunk], "e" * 64)
    store = Store(f"sqlite:///{tree / 'store-eeeeeeeeeeeeeeee.sqlite'}", read_only=True)
    try:
        assert store.documents_with_ids(["bm25.md"])["bm25.md"].text == again.text  # the base's hidden, the new one
    finally:
        store.close()
