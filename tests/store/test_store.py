import pytest

from dashrag.chunkers.whole_document import WholeDocumentChunker
from dashrag.documents.chunk_set import ChunkSet
from dashrag.errors import PersistenceError
from dashrag.store.store import Store, sqlite_url


@pytest.fixture()
def filled(tmp_path, example_corpus):
    chunks = ChunkSet(WholeDocumentChunker({}).chunk(example_corpus.documents))
    store = Store(sqlite_url(tmp_path / "s.sqlite"))
    store.write_corpus(example_corpus.documents, chunks.chunks, chunks.fingerprint)
    return store, chunks


def test_chunks_read_back_with_the_same_fingerprint(filled):
    store, chunks = filled
    assert store.read_chunk_set().fingerprint == chunks.fingerprint


def test_documents_read_back_in_corpus_order(filled, example_corpus):
    store, _ = filled
    assert [d.id for d in store.read_documents()] == [d.id for d in example_corpus]


def test_a_second_corpus_is_refused(filled, example_corpus):
    store, chunks = filled
    with pytest.raises(PersistenceError, match="already holds a corpus"):
        store.write_corpus(example_corpus.documents, chunks.chunks, chunks.fingerprint)


def test_retriever_records_round_trip(filled):
    store, chunks = filled
    store.add_retriever_record("keyword", {"component": "TFIDFRetriever"}, "/tmp/x", chunks.fingerprint)
    (record,) = store.retriever_records()
    assert (record.name, record.config["component"]) == ("keyword", "TFIDFRetriever")


def test_password_is_hidden_in_messages():
    with pytest.raises(PersistenceError) as info:
        Store("postgresql+nonexistentdriver://user:s3cret@localhost/db")
    assert "s3cret" not in str(info.value)


@pytest.fixture()
def with_metadata(tmp_path):
    from dashrag.documents.model import SourceDocument

    documents = [SourceDocument(id="a", text="alpha text", metadata={"year": 2019, "lang": "es", "tags": ["x", "y"],
                                                                     "published": "2019-05-01", "ev": [{"s": 1}]}),
                 SourceDocument(id="b", text="beta text", metadata={"LANG": ["en"]})]
    chunks = ChunkSet(WholeDocumentChunker({}).chunk(documents))
    path = tmp_path / "m.sqlite"
    store = Store(sqlite_url(path))
    store.write_corpus(documents, chunks.chunks, chunks.fingerprint)
    store.close()
    return path, chunks


def test_metadata_is_stored_and_read_back_whole(with_metadata):
    from dashrag.store.sqlite_reader import read_sqlite_chunk_set

    path, chunks = with_metadata
    store = Store(sqlite_url(path), read_only=True)
    for read in (store.read_chunk_set(), read_sqlite_chunk_set(path)):
        assert read.fingerprint == chunks.fingerprint
        assert read.document_metadata == chunks.document_metadata
    assert store.read_documents()[0].metadata["year"] == 2019
    store.close()


def test_a_store_written_before_metadata_existed_reads_its_categories(with_metadata):
    """A store of today's saved folders has no metadata column: its categories stand in, with the fingerprint
    the code that wrote it computed (its chunks carried the categories as tuples)."""
    import sqlite3
    from dataclasses import replace

    from dashrag.documents.model import normalise_categories
    from dashrag.store.sqlite_reader import read_sqlite_chunk_set

    path, chunks = with_metadata
    with sqlite3.connect(path) as connection:
        connection.execute("DROP INDEX ix_documents_id_metadata")  # written before the index too
        connection.execute("ALTER TABLE documents DROP COLUMN metadata")
    then = ChunkSet(replace(c, metadata=normalise_categories(c.metadata)) for c in chunks.chunks)
    store = Store(sqlite_url(path), read_only=True)
    for read in (store.read_chunk_set(), read_sqlite_chunk_set(path)):
        assert read.document_metadata == [{"lang": ["es"], "tags": ["x", "y"], "published": ["2019-05-01"]},
                                          {"LANG": ["en"]}]
        assert read.fingerprint == then.fingerprint
    assert store.read_documents()[1].metadata == {"LANG": ["en"]}
    store.close()


# -- a change applied to a copy of the store file (docs/updating.md, "Cost") ---------------------------
def _changed_copy(source, tmp_path, gone, documents, first_id):
    from dataclasses import replace

    from dashrag.store.store import write_changed_store_file

    chunks = [replace(c, id=first_id + i) for i, c in enumerate(WholeDocumentChunker({}).chunk(documents))]
    target = tmp_path / "changed.sqlite"
    return write_changed_store_file(source, target, gone, documents, chunks, "f" * 64), target


def test_a_changed_store_holds_the_kept_documents_in_order_then_the_new_ones(filled, tmp_path, example_corpus):
    import hashlib

    from dashrag.documents.model import SourceDocument

    store, chunks = filled
    source = tmp_path / "s.sqlite"
    before = hashlib.sha256(source.read_bytes()).hexdigest()
    gone = [example_corpus.documents[0].id, example_corpus.documents[2].id]
    new = [SourceDocument(id="new-1", text="a new text", metadata={"year": 2026}),
           SourceDocument(id=example_corpus.documents[2].id, text="its replacement")]
    url, _ = _changed_copy(source, tmp_path, gone, new, int(chunks.ids.max()) + 1)
    changed = Store(url, read_only=True)
    kept = [d.id for d in example_corpus.documents if d.id not in gone]
    assert [d.id for d in changed.read_documents()] == kept + ["new-1", example_corpus.documents[2].id]
    assert changed.read_documents()[-2].metadata == {"year": 2026}
    assert [c.document_id for c in changed.read_chunk_set().chunks] == kept + ["new-1", example_corpus.documents[2].id]
    changed.close()
    assert hashlib.sha256(source.read_bytes()).hexdigest() == before  # the old tree's store is untouched


def test_a_store_written_before_metadata_existed_takes_a_change_with_its_categories_kept(with_metadata, tmp_path):
    import sqlite3

    from dashrag.documents.model import SourceDocument

    path, _ = with_metadata
    with sqlite3.connect(path) as connection:
        connection.execute("DROP INDEX ix_documents_id_metadata")  # written before the index too
        connection.execute("ALTER TABLE documents DROP COLUMN metadata")
    url, _ = _changed_copy(path, tmp_path, ["a"], [SourceDocument(id="c", text="gamma", metadata={"n": 1})], 10)
    changed = Store(url, read_only=True)
    assert [(d.id, d.metadata) for d in changed.read_documents()] == [("b", {"LANG": ["en"]}), ("c", {"n": 1})]
    changed.close()


def test_a_change_that_fails_leaves_no_store_file_behind(filled, tmp_path, example_corpus):
    from dashrag.documents.model import SourceDocument

    _, chunks = filled
    taken = int(chunks.ids.max())  # a chunk id the store holds already: the insert fails
    with pytest.raises(PersistenceError, match="cannot be written"):
        _changed_copy(tmp_path / "s.sqlite", tmp_path, [], [SourceDocument(id="x", text="x")], taken)
    assert not (tmp_path / "changed.sqlite").exists()
    assert not list(tmp_path.glob(".store-*"))
