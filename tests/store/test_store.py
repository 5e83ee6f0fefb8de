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
