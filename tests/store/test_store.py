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
        connection.execute("ALTER TABLE documents DROP COLUMN metadata")
    then = ChunkSet(replace(c, metadata=normalise_categories(c.metadata)) for c in chunks.chunks)
    store = Store(sqlite_url(path), read_only=True)
    for read in (store.read_chunk_set(), read_sqlite_chunk_set(path)):
        assert read.document_metadata == [{"lang": ["es"], "tags": ["x", "y"], "published": ["2019-05-01"]},
                                          {"LANG": ["en"]}]
        assert read.fingerprint == then.fingerprint
    assert store.read_documents()[1].metadata == {"LANG": ["en"]}
    store.close()
