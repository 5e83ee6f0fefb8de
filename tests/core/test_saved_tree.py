"""Folders of saved-folder format 1 (issue 36): fingerprinted sequentially, they still load and are still verified
under that fingerprint; their first update fingerprints the new chunk set additively and saves format 2, and every
later update shifts the fingerprint by what it changed (docs/scale.md, "Decisions").

``tests/data/format1_keyword_tree`` was saved by dashrag at commit b267066 (the last format-1 version): the
``keyword`` preset over ``examples/corpus``, cut by StructureChunker(400, 40), so its chunks carry own fields."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import dashrag
from dashrag.core.persistence import FORMAT_VERSION, read_manifest
from dashrag.core.saved_tree import saved_store_url
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.corpus import Corpus
from dashrag.documents.fingerprint import ADDITIVE, SEQUENTIAL
from dashrag.documents.model import SourceDocument
from dashrag.errors import PersistenceError
from dashrag.presets import load_preset

FORMAT_1 = Path(__file__).parent.parent / "data" / "format1_keyword_tree"
CHUNKER = {"component": "StructureChunker", "params": {"chunk_size": 400, "chunk_overlap": 40}}
QUERIES = ["how does bm25 rank documents", "vector database", "chunk overlap", "evaluation metrics", "tokenizer"]
NEW = [SourceDocument(id="fusion.md", text="Reciprocal rank fusion merges the rankings of several retrievers. "
                      "It needs no score normalisation and weights each child.", metadata={"topic": ["fusion"]}),
       SourceDocument(id="stemming.txt", text="A stemmer cuts words to their stems, so that ranking and ranked "
                      "match the same documents in a keyword index.")]


@pytest.fixture
def format_1(tmp_path) -> Path:
    """A copy of the format-1 folder (a load's fast path never trusts a copy: every file is verified)."""
    folder = tmp_path / "tree"
    shutil.copytree(FORMAT_1, folder)
    return folder


def answers(tree) -> list[list[tuple[str, int, float]]]:
    return [[(c.document_id, c.chunk.position, c.score) for c in tree.retrieve(q)[0]] for q in QUERIES]


def assert_same_answers(got, expected) -> None:
    """The same chunks in the same order, scores within 1e-5."""
    assert [[hit[:2] for hit in a] for a in got] == [[hit[:2] for hit in a] for a in expected]
    assert [[hit[2] for hit in a] for a in got] == [pytest.approx([hit[2] for hit in a], abs=1e-5) for a in expected]


def rebuilt_answers(documents, tmp_path: Path):
    out = tmp_path / "rebuilt"
    dashrag.api.build_tree(load_preset("keyword"), Corpus(tuple(documents)), out, chunker=CHUNKER)
    tree = dashrag.load(out)
    try:
        return answers(tree)
    finally:
        tree.close()


def stored_documents(folder: Path) -> list[SourceDocument]:
    from dashrag.store.store import Store

    store = Store(saved_store_url(folder), read_only=True)
    try:
        return store.read_documents()
    finally:
        store.close()


def test_a_format_1_folder_loads_verified_under_its_sequential_fingerprint(format_1, tmp_path):
    manifest = read_manifest(format_1)
    assert manifest["format_version"] == 1
    tree = dashrag.load(format_1)
    try:
        chunks = tree.require_infra().chunks
        assert chunks.fingerprint_scheme == SEQUENTIAL and chunks.fingerprint == manifest["corpus_fingerprint"]
        assert chunks.chunk_fields  # the sections of the markdown files: own fields are in the line hashed
        assert_same_answers(answers(tree), rebuilt_answers(stored_documents(format_1), tmp_path))
    finally:
        tree.close()


def test_a_format_1_folder_whose_store_changed_is_refused(format_1):
    store = next(format_1.glob("store-*.sqlite"))
    with sqlite3.connect(store) as connection:
        connection.execute("UPDATE chunks SET text = text || '!' WHERE id = 3")
    connection.close()
    with pytest.raises(PersistenceError, match="saved for corpus b346c3e8da95, but the store holds corpus"):
        dashrag.load(format_1)


def test_a_format_1_folder_saved_again_unchanged_stays_format_1(format_1, tmp_path):
    tree = dashrag.load(format_1)
    try:
        tree.save(tmp_path / "again")
    finally:
        tree.close()
    assert read_manifest(tmp_path / "again")["format_version"] == 1
    dashrag.load(tmp_path / "again", full_check=True).close()


def test_the_first_update_migrates_to_format_2_and_later_ones_shift_the_fingerprint(format_1, tmp_path):
    before = stored_documents(format_1)
    dashrag.update(format_1, add=NEW[:1], remove=["chunking.txt"])
    manifest = read_manifest(format_1)
    assert manifest["format_version"] == FORMAT_VERSION == 2
    tree = dashrag.load(format_1, full_check=True)  # the fingerprint recomputed whole, additively
    try:
        chunks = tree.require_infra().chunks
        assert chunks.fingerprint_scheme == ADDITIVE and chunks.fingerprint == manifest["corpus_fingerprint"]
        assert chunks.fingerprint == ChunkSet(list(chunks.chunks)).fingerprint
    finally:
        tree.close()
    dashrag.update(format_1, add=NEW[1:], remove=["bm25.md"])  # shifted by the change (docs/scale.md)
    tree = dashrag.load(format_1, full_check=True)
    try:
        assert tree.require_infra().chunks.fingerprint == read_manifest(format_1)["corpus_fingerprint"]
        kept = [d for d in before if d.id not in ("chunking.txt", "bm25.md")]
        assert_same_answers(answers(tree), rebuilt_answers(kept + NEW, tmp_path))
    finally:
        tree.close()


def index_layout(folder: Path) -> str:
    """The BM25 index's saved layout (weights.json's "layout"; eager weights, saved before query-time ones, have
    none) in the snapshot the manifest names."""
    import json

    [weights] = (folder / read_manifest(folder)["snapshot"]).glob("nodes/*/weights.json")
    return json.loads(weights.read_text(encoding="utf-8")).get("layout", "eager")


def test_eager_weights_saved_before_answer_as_query_time_ones_and_an_update_writes_segments(format_1, tmp_path):
    """A folder saved with eager BM25 weights loads and scores with them (docs/scale.md, "Query-time weights"); a
    rebuild of its documents derives the weights at query time and answers the same; its first update saves the
    query-time postings as segments (docs/scale.md, "Segments of the keyword index"), as a build now does."""
    assert index_layout(format_1) == "eager"
    tree = dashrag.load(format_1)
    try:
        assert_same_answers(answers(tree), rebuilt_answers(stored_documents(format_1), tmp_path))
    finally:
        tree.close()
    assert index_layout(tmp_path / "rebuilt") == "segments"
    dashrag.update(format_1, add=NEW[:1])
    assert index_layout(format_1) == "segments"
