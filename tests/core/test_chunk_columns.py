"""A saved snapshot holds its chunk set's columns, and a load that trusts the store maps them (core/chunk_columns.py,
docs/scale.md "Chunk columns in the snapshot"): they are the store's rows, after a build and after every update;
a load that reads the rows (a copied folder, a full check) refuses columns that disagree; a tree loaded before an
update keeps answering; a folder saved before the columns existed loads from its rows and gets them at its next save.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import dashrag
from dashrag.api import build_tree, update_tree
from dashrag.core.persistence import MANIFEST_NAME, read_manifest
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import SourceDocument
from dashrag.errors import PersistenceError
from dashrag.store.sqlite_reader import read_chunk_set, sqlite_url

FORMAT_1 = Path(__file__).parent.parent / "data" / "format1_keyword_tree"  # saved before the columns existed
CONFIG = {"component": "BM25Retriever", "params": {"top_k": 6}}
CHUNKER = {"component": "StructureChunker", "params": {"chunk_size": 160, "chunk_overlap": 0}}
QUERIES = ["cells and proteins", "methods of sampling", "gene expression", "results in mice"]
FILTER = {"year": {"$gte": 2021}}
WORDS = ["cells", "proteins", "gene", "expression", "mice", "sampling", "immune", "tumour", "blood", "vitamin"]


def document(number: int) -> SourceDocument:
    """Every other document has sections (its chunks get fields), every third one metadata."""
    words = " ".join(WORDS[(number + k) % len(WORDS)] for k in range(12))
    text = (f"# Part {number}\n\nIntroduction about {words}.\n\n## Methods\n\nSampling of {words} again.\n\n"
            f"## Results\n\nResults in mice for {number}." if number % 2 == 0 else f"Plain text {number}: {words}.")
    metadata = {"year": 2019 + number % 4, "tags": [WORDS[number % len(WORDS)]]} if number % 3 == 0 else {}
    return SourceDocument(id=f"doc{number}", text=text,
                          metadata={**metadata, **({"file_type": "md"} if number % 2 == 0 else {})})


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("columns") / "tree"
    build_tree(CONFIG, Corpus(tuple(document(n) for n in range(24))), folder, chunker=CHUNKER)
    return folder


@pytest.fixture()
def saved(built, tmp_path) -> Path:
    """A copy of the built tree, loaded and saved once, so that its manifest records its own store file (a load
    trusts a store as its save recorded it, and a copy has other inodes): what the user's own folder is."""
    folder = tmp_path / "tree"
    shutil.copytree(built, folder)
    tree = dashrag.load(folder)
    tree.save(folder)
    tree.close()
    return folder


def chunks_of(tree):
    return tree.require_infra().chunks


def columns(chunk_set) -> tuple:
    return (chunk_set.column_arrays().tolist(), chunk_set.document_ids, list(chunk_set.document_metadata),
            dict(chunk_set.chunk_fields), chunk_set.fingerprint)


def store_rows(folder: Path):
    """The chunk set of the folder's store, read from its rows (the source of truth) and hashed whole."""
    return read_chunk_set(sqlite_url(folder / read_manifest(folder)["store"]))


def answers(tree) -> list:
    """Every hit as a user gets it: ids, position, text, its document's metadata, its own fields, score; with a
    filter on the metadata too."""
    hits = [tree.retrieve(q)[0] for q in QUERIES] + [tree.retrieve(q, filters=FILTER)[0] for q in QUERIES]
    return [[(h.document_id, h.chunk.position, h.chunk.text, dict(h.chunk.metadata), dict(h.chunk.fields),
              round(h.score, 6)) for h in hit] for hit in hits]


def mapped(chunk_set) -> bool:
    """Whether the set's arrays are the snapshot's, mapped read-only (not made from the store's rows)."""
    return not chunk_set.ids.flags.writeable


def rewrite(folder: Path, rel: str, data: bytes) -> None:
    """Replace one state file of the snapshot and record it in the manifest as a save would (a consistent edit)."""
    manifest = read_manifest(folder)
    (folder / manifest["snapshot"] / rel).write_bytes(data)
    manifest["files"][rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    manifest["file_stats"].pop(rel)
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest))


def test_a_save_writes_the_columns_and_a_load_maps_them_equal_to_the_stores_rows(saved):
    manifest = read_manifest(saved)
    assert manifest["chunk_columns"] == "chunks"
    assert {"chunks/columns.npy", "chunks/documents.json"} <= set(manifest["files"])
    tree = dashrag.load(saved)
    loaded, rows = chunks_of(tree), store_rows(saved)
    assert mapped(loaded) and not mapped(rows)
    assert columns(loaded) == columns(rows)
    assert any(rows.document_metadata) and rows.chunk_fields  # the corpus exercises metadata and fields
    assert answers(tree) == answers(dashrag.load(saved, full_check=True))  # the rows read, the columns checked
    tree.close()


def test_after_adds_replaces_and_removes_the_columns_are_the_new_stores_rows(saved):
    before = dashrag.load(saved)
    expected_before = answers(before)
    changes = [{"add": [document(n) for n in range(24, 30)]},  # an addition: a delta over the old store
               {"remove": ["doc3", "doc26"]},  # one of the base's, one of the delta's: a whole store
               {"add": [SourceDocument(id="doc6", text="Replaced: vitamin and blood.", metadata={"year": 2024}),
                        document(31)]}]
    for change in changes:
        update_tree(saved, **change)
        tree = dashrag.load(saved)
        assert mapped(chunks_of(tree))
        assert columns(chunks_of(tree)) == columns(store_rows(saved))
        assert answers(tree) == answers(dashrag.load(saved, full_check=True))
        tree.close()
    # loaded before three updates (its snapshot and store removed by the later saves): it answers as it did
    assert answers(before) == expected_before
    before.close()


def test_a_copied_folder_reads_its_rows_checks_the_columns_and_its_next_save_maps_them(saved, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(saved, copy)
    tree = dashrag.load(copy)  # another inode: the store is re-hashed, the chunk set read from its rows
    assert not mapped(chunks_of(tree))
    tree.save(copy)
    again = dashrag.load(copy)
    assert mapped(chunks_of(again)) and answers(again) == answers(tree)


def test_columns_that_disagree_with_the_store_are_refused_by_a_load_that_reads_the_rows(saved, tmp_path):
    manifest = read_manifest(saved)
    path = saved / manifest["snapshot"] / "chunks" / "columns.npy"
    edited = np.load(path).copy()
    edited[3, 0] += 1  # the first chunk's start, moved by one
    rewrite(saved, "chunks/columns.npy", _npy(edited))
    with pytest.raises(PersistenceError, match="chunk columns disagree with the store"):
        dashrag.load(saved, full_check=True)
    copy = tmp_path / "copy"
    shutil.copytree(saved, copy)
    with pytest.raises(PersistenceError, match="chunk columns disagree with the store"):
        dashrag.load(copy)


@pytest.mark.parametrize(("rel", "data", "message"), [
    ("chunks/documents.json", b'{"ids": "doc0", "metadata": {}, "fields": {}}', "not the chunks' documents"),
    ("chunks/documents.json", b'{"ids": ["doc0"], "metadata": {}, "fields": {}}', "name documents that"),
    ("chunks/columns.npy", None, "not the chunk columns"),
])
def test_malformed_columns_are_a_clear_error(saved, rel, data, message):
    rewrite(saved, rel, _npy(np.zeros((2, 3), dtype=np.float32)) if data is None else data)
    with pytest.raises(PersistenceError, match=message):
        dashrag.load(saved)


def test_a_manifest_naming_other_columns_is_refused(saved):
    manifest = read_manifest(saved)
    manifest["chunk_columns"] = "../elsewhere"
    (saved / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(PersistenceError, match="chunk_columns"):
        dashrag.load(saved)


def test_a_folder_saved_before_the_columns_loads_from_its_rows_and_gets_them_when_saved(tmp_path):
    folder = tmp_path / "tree"
    shutil.copytree(FORMAT_1, folder)
    assert "chunk_columns" not in read_manifest(folder)
    tree = dashrag.load(folder)
    assert not mapped(chunks_of(tree))
    expected = answers(tree)
    tree.save(folder)
    assert read_manifest(folder)["chunk_columns"] == "chunks"
    again = dashrag.load(folder)
    assert mapped(chunks_of(again))
    assert answers(again) == expected
    assert columns(chunks_of(again)) == columns(store_rows(folder).with_fingerprint_scheme(
        chunks_of(again).fingerprint_scheme))


def _npy(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()
