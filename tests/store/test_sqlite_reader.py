"""Loading reads an SQLite store with sqlite3: the same chunk set as the SQLAlchemy Store reads."""

import sqlite3

import pytest

from dashrag.chunkers.recursive_character import RecursiveCharacterChunker
from dashrag.documents.chunk_set import ChunkSet
from dashrag.errors import PersistenceError
from dashrag.store.models import ChunkRow, DocumentRow
from dashrag.store.sqlite_reader import CHUNKS, DOCUMENT_CATEGORIES, DOCUMENT_METADATA, read_chunk_set, sqlite_path
from dashrag.store.store import Store, sqlite_url


@pytest.fixture()
def store_file(tmp_path, example_corpus):
    chunker = RecursiveCharacterChunker({"chunk_size": 300, "chunk_overlap": 30})
    chunks = ChunkSet(chunker.chunk(example_corpus.documents))
    path = tmp_path / "s.sqlite"
    store = Store(sqlite_url(path))
    store.write_corpus(example_corpus.documents, chunks.chunks, chunks.fingerprint)
    store.close()
    return path, chunks


def test_sqlite3_reads_the_chunk_set_the_store_wrote(store_file):
    path, chunks = store_file
    read = read_chunk_set(sqlite_url(path))
    assert read.fingerprint == chunks.fingerprint
    assert [c.metadata for c in read.chunks] == [c.metadata for c in chunks.chunks]


def test_the_queries_name_the_tables_and_columns_of_the_models():
    assert f"FROM {DocumentRow.__tablename__}" in DOCUMENT_CATEGORIES
    assert f"FROM {ChunkRow.__tablename__}" in CHUNKS
    columns = ["id", "document_id", "position", "text", "start", "end"]
    assert all(name in ChunkRow.__table__.columns for name in columns)
    assert all(name in DocumentRow.__table__.columns for name in ("id", "categories"))


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///x.sqlite?mode=ro", "postgresql://u@h/db"])
def test_other_urls_go_through_the_store(url):
    assert sqlite_path(url) is None


def test_a_damaged_store_is_a_persistence_error(store_file):
    path, _ = store_file
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE chunks")
    with pytest.raises(PersistenceError, match="cannot read the store"):
        read_chunk_set(sqlite_url(path))


def test_reading_never_writes(store_file):
    path, _ = store_file
    before = path.read_bytes()
    read_chunk_set(sqlite_url(path))
    assert path.read_bytes() == before


def test_a_load_reads_the_documents_metadata_from_an_index_not_through_their_texts(store_file):
    """The documents' rows hold their text before their metadata; a load's read of every id and metadata is
    answered from the covering index a new store gets (store.DOCUMENT_METADATA_INDEX), so it does not read the
    corpus's texts a second time."""
    path, chunks = store_file
    with sqlite3.connect(path) as connection:
        plan = " ".join(str(step[-1]) for step in connection.execute(f"EXPLAIN QUERY PLAN {DOCUMENT_METADATA}"))
        connection.execute("DROP INDEX ix_documents_id_metadata")  # a store written before the index
    assert "COVERING INDEX ix_documents_id_metadata" in plan, plan
    assert read_chunk_set(sqlite_url(path)).fingerprint == chunks.fingerprint


def test_chunk_fields_read_back_the_same_through_sqlite3_and_the_store(tmp_path, example_corpus):
    """A corpus with structure (the examples' Markdown headings): both readers give each chunk its own fields and
    the fingerprint the writer computed; the fields listing reads them per document."""
    from dashrag.chunkers.structure import StructureChunker

    chunks = ChunkSet(StructureChunker({"chunk_size": 200, "chunk_overlap": 20}).chunk(example_corpus.documents))
    assert chunks.chunk_fields  # the .md files' sections
    path = tmp_path / "s.sqlite"
    store = Store(sqlite_url(path))
    store.write_corpus(example_corpus.documents, chunks.chunks, chunks.fingerprint)
    try:
        through_store = store.read_chunk_set()
        listed = store.chunk_fields()
    finally:
        store.close()
    for read in (read_chunk_set(sqlite_url(path)), through_store):
        assert read.fingerprint == chunks.fingerprint
        assert [dict(c.fields) for c in read.chunks] == [dict(c.fields) for c in chunks.chunks]
        assert [c.all_metadata for c in read.chunks] == [c.all_metadata for c in chunks.chunks]
    assert listed == [(c.document_id, dict(c.fields)) for c in chunks.chunks if c.fields]
    with sqlite3.connect(path) as connection:  # a chunk without fields stores SQL NULL, not the JSON 'null'
        assert connection.execute("SELECT count(*) FROM chunks WHERE fields = 'null'").fetchone() == (0,)
