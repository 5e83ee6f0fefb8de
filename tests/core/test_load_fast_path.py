"""A load trusts files the save recorded as unchanged (size, times, inode) instead of re-hashing them; any edit
through the file system still fails the load, and ``full_check`` re-hashes everything."""

import json
import os
import sqlite3
from pathlib import Path

import pytest

import dashrag
from dashrag.core.persistence import file_stat, unchanged_since_save
from dashrag.errors import PersistenceError

CONFIG = {"component": "BM25Retriever", "params": {"top_k": 3}}


@pytest.fixture()
def folder(tmp_path, example_corpus) -> Path:
    return dashrag.build(CONFIG, example_corpus, tmp_path / "work").save(tmp_path / "saved")


def manifest_of(folder: Path) -> dict:
    return json.loads((folder / "dashrag.json").read_text())


def test_a_fresh_save_records_every_state_file_and_the_store_as_unchanged(folder):
    manifest = manifest_of(folder)
    snapshot = folder / manifest["snapshot"]
    assert set(manifest["file_stats"]) == set(manifest["files"])
    assert all(unchanged_since_save(snapshot / rel, stat) for rel, stat in manifest["file_stats"].items())
    assert unchanged_since_save(folder / manifest["store"], manifest["store_stat"])


def test_a_chunk_edited_in_the_store_fails_the_load(folder):
    store = folder / manifest_of(folder)["store"]
    with sqlite3.connect(store) as connection:
        connection.execute("UPDATE chunks SET text = text || ' (edited)' WHERE id = (SELECT min(id) FROM chunks)")
    connection.close()
    with pytest.raises(PersistenceError, match="another corpus"):
        dashrag.load(folder)


def test_an_edit_of_the_same_size_with_the_mtime_put_back_fails_the_load(folder):
    manifest = manifest_of(folder)
    rel = next(r for r in manifest["files"] if r.endswith(".npy"))
    path = folder / manifest["snapshot"] / rel
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the ctime moves on regardless
    with pytest.raises(PersistenceError, match="checksum"):
        dashrag.load(folder)


def test_full_check_finds_what_the_fast_path_cannot(folder):
    """A change that leaves size, times and inode as recorded (a disk fault, a raw write) passes the fast path
    by design; the full check re-hashes and finds it."""
    manifest = manifest_of(folder)
    rel = next(r for r in manifest["files"] if r.endswith(".npy"))
    path = folder / manifest["snapshot"] / rel
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    manifest["file_stats"][rel] = file_stat(path)  # as if the bytes had changed beneath the file system
    (folder / "dashrag.json").write_text(json.dumps(manifest))
    dashrag.load(folder).close()
    with pytest.raises(PersistenceError, match="checksum"):
        dashrag.load(folder, full_check=True)


def test_a_copied_folder_loads_through_the_full_check(folder, tmp_path):
    import shutil

    copy = Path(shutil.copytree(folder, tmp_path / "copy"))
    manifest = manifest_of(copy)
    assert not unchanged_since_save(copy / manifest["store"], manifest["store_stat"])
    loaded = dashrag.load(copy)
    assert loaded.retrieve("rank fusion")[0] == dashrag.load(folder).retrieve("rank fusion")[0]
