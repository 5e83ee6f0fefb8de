"""Loading reads an SQLite store with sqlite3: the same chunk set as the SQLAlchemy Store reads."""

import sqlite3

import pytest

from dashrag.chunkers.recursive_character import RecursiveCharacterChunker
from dashrag.documents.chunk_set import ChunkSet
from dashrag.errors import PersistenceError
from dashrag.store.models import ChunkRow, DocumentRow
from dashrag.store.sqlite_reader import (
    CHUNKS,
    CHUNKS_FROM_INDEX,
    DOCUMENT_CATEGORIES,
    DOCUMENT_METADATA,
    read_chunk_set,
    sqlite_path,
)
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


def test_a_load_reads_the_chunks_columns_from_an_index_not_through_their_texts(store_file):
    """A load leaves the chunks' texts in the store; its read of every chunk's other columns is answered from the
    covering index a new store gets (store.CHUNK_COLUMNS_INDEX); a store written before it reads the same."""
    path, chunks = store_file
    with sqlite3.connect(path) as connection:
        plan = " ".join(str(step[-1]) for step in connection.execute(f"EXPLAIN QUERY PLAN {CHUNKS_FROM_INDEX}"))
        connection.execute("DROP INDEX ix_chunks_columns")  # a store written before the index
    assert "COVERING INDEX ix_chunks_columns" in plan, plan
    read = read_chunk_set(sqlite_url(path))
    assert read.fingerprint == chunks.fingerprint and read.texts == chunks.texts


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


# -- texts left in the store, read when shown (docs/scale.md, "Texts left in the store") -----------------------
TEXTS_CHUNKER = {"component": "StructureChunker", "params": {"chunk_size": 300, "chunk_overlap": 30}}
TEXTS_QUERIES = ["how does bm25 rank documents", "vector database", "chunk overlap", "evaluation metrics"]
FUSED = {"component": "ParallelRetriever", "params": {"merge_strategy": "rrf", "children": [
    {"component": "BM25Retriever", "params": {"top_k": 8}},
    {"component": "TFIDFRetriever", "params": {"top_k": 8}}]}}


@pytest.fixture(scope="module")
def saved_trees(tmp_path_factory, example_corpus):
    """The keyword preset and a fusion of BM25 and TF-IDF, built once over the examples (chunks with own fields)."""
    from dashrag.api import build_tree
    from dashrag.presets import load_preset

    folders = {}
    for name, config in (("keyword", load_preset("keyword")), ("fused", FUSED)):
        folders[name] = tmp_path_factory.mktemp(name) / "tree"
        build_tree(config, example_corpus, folders[name], chunker=TEXTS_CHUNKER)
    return folders


def _shown(tree) -> str:
    """Every answer and trace a user can see, as JSON: hits with text and metadata, a batch, neighbour windows,
    a filtered query, the trace's outputs with their texts (its timings left out)."""
    import json

    def without_timings(node):
        if isinstance(node, dict):
            return {k: without_timings(v) for k, v in node.items() if k != "elapsed_ms"}
        if isinstance(node, list):
            return [without_timings(v) for v in node]
        return node

    tree.set_trace_settings(include_text=True)
    shown = []
    for query in TEXTS_QUERIES:
        hits, trace = tree.retrieve(query, top_k=6)
        shown.append([h.to_json(include_metadata=True) for h in hits])
        shown.append(without_timings(trace))
        shown.append([h.to_json(include_metadata=True) for h in tree.expand_retrieved_chunks(hits, 3)])
        filtered, _ = tree.retrieve(query, top_k=4, filters={"section": {"$exists": True}})
        shown.append([h.to_json(include_metadata=True) for h in filtered])
    shown.append([[h.to_json() for h in hits] for hits, _ in tree.retrieve_batch(TEXTS_QUERIES)])
    chunks = tree.require_infra().chunks
    shown.append([c.text for c in chunks.chunks])
    return json.dumps(shown, sort_keys=True)


@pytest.mark.parametrize("name", ["keyword", "fused"])
def test_a_tree_loaded_without_its_texts_answers_byte_identically_to_one_holding_them(saved_trees, name):
    """What the load made before the texts were left in the store: every chunk with its text (a ChunkSet of
    Chunk objects, the same rows); what it makes now: columns, the texts read when shown."""
    from dataclasses import replace

    import dashrag
    from dashrag.documents.chunk_set import StoredChunks

    lazy = dashrag.load(saved_trees[name])
    held = dashrag.load(saved_trees[name])
    try:
        infra = held.require_infra()
        assert isinstance(lazy.require_infra().chunks.chunks, StoredChunks)
        every_text = ChunkSet(list(infra.chunks.chunks), infra.chunks.fingerprint)
        held.inject_infra(replace(infra, chunks=every_text))
        assert not isinstance(held.require_infra().chunks.chunks, StoredChunks)
        assert _shown(lazy) == _shown(held)
    finally:
        lazy.close()
        held.close()


def test_a_load_reads_no_text_and_an_answer_reads_its_texts_in_one_query(saved_trees):
    import dashrag

    tree = dashrag.load(saved_trees["keyword"])
    try:
        stored = tree.require_infra().chunks.chunks
        assert stored.held == {}  # no text was read at load
        statements: list[str] = []
        stored.texts._connection.set_trace_callback(statements.append)
        hits, _ = tree.retrieve(TEXTS_QUERIES[0], top_k=8)
        texts = [h.chunk.text for h in hits]
        assert len(statements) == 1 and "json_each" in statements[0], statements
        assert all(texts) and len(texts) == 8
        tree.expand_retrieved_chunks(hits, 5)
        assert 2 <= len(statements) <= 3  # every window's chunks in one more, the merged windows' in another
    finally:
        tree.close()


def test_a_loaded_tree_keeps_answering_after_an_update_removed_its_store_file(saved_trees, tmp_path):
    """The load holds its store file open, as it maps its postings: an update's save removes the old store file,
    and the tree loaded before it still shows the texts of the corpus it was loaded with. (The first update makes
    the store a delta over the build's file, store/segments.py; the second replaces that delta.)"""
    import shutil

    import dashrag
    from dashrag.documents.model import SourceDocument

    folder = tmp_path / "tree"
    shutil.copytree(saved_trees["keyword"], folder)
    dashrag.update(folder, add=[SourceDocument(id="first.md", text="A first update, so the store is a delta.")])
    tree = dashrag.load(folder)
    try:
        before = _shown(tree)
        old_store = tree.require_infra().chunks.chunks.texts.path
        gone = tree.require_infra().chunks.document_ids[0]
        dashrag.update(folder, add=[SourceDocument(id="new.md", text="A new document about vector databases.")],
                       remove=[gone])
        assert not old_store.exists()  # the old tree's store (its delta) left the folder
        assert _shown(tree) == before
        updated = dashrag.load(folder)
        try:
            assert gone not in updated.require_infra().chunks.document_ids
            assert "new.md" in [h.document_id for h in updated.retrieve("vector databases")[0]]
        finally:
            updated.close()
    finally:
        tree.close()


def test_a_chunk_the_store_lacks_is_a_clear_error(store_file, tmp_path):
    """Texts read from a store file that lacks a chunk of the set (another program deleted its row): an error
    naming the chunk, not a shorter answer."""
    import shutil

    from dashrag.store.sqlite_reader import SqliteChunkTexts

    path, chunks = store_file
    broken = tmp_path / "broken.sqlite"
    shutil.copyfile(path, broken)
    with sqlite3.connect(broken) as connection:
        connection.execute("DELETE FROM chunks WHERE id = 3")
    read = read_chunk_set(sqlite_url(path)).chunks
    texts = SqliteChunkTexts(broken)
    try:
        lacking = ChunkSet.from_columns(read.ids, [read.document_ids[n] for n in read.document_index], read.positions,
                                        read.starts, read.ends, {}, texts)
        assert lacking.by_id(2).text == chunks.by_id(2).text
        with pytest.raises(PersistenceError, match=r"lacks the text of chunk\(s\) 3"):
            lacking.chunks_at([1, 3])
        with pytest.raises(PersistenceError, match="lacks the text of chunk 3"):
            _ = lacking.texts
    finally:
        texts.close()
