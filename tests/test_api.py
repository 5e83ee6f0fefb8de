"""dashrag.build / save / load: presets by name, loads that never write, saves that touch only their own files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import dashrag
from dashrag.errors import ConfigError, PersistenceError
from tests.conftest import folder_digest

CONFIG = {"component": "TFIDFRetriever", "params": {"top_k": 5}}
QUERY = "dense vectors and cosine"


@pytest.fixture()
def saved(tmp_path, example_corpus) -> Path:
    return dashrag.build(CONFIG, example_corpus, tmp_path / "work").save(tmp_path / "saved")


def edit_manifest(folder: Path, **changes) -> None:
    path = folder / "dashrag.json"
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    path.write_text(json.dumps(manifest))


def store_file(folder: Path) -> Path:
    return folder / json.loads((folder / "dashrag.json").read_text())["store"]


def test_build_accepts_a_preset_name(tmp_path, example_corpus):
    tree = dashrag.build("keyword", example_corpus, tmp_path / "work")
    assert tree.to_config()["component"] == "BM25Retriever" and tree.retrieve(QUERY)[0]


@pytest.mark.parametrize("name", ["no-such-preset", "../components/keyword", "/etc/passwd"])
def test_build_refuses_a_name_that_is_not_a_preset(tmp_path, example_corpus, name):
    with pytest.raises(ConfigError, match="is not a preset"):
        dashrag.build(name, example_corpus, tmp_path / "work")
    assert not (tmp_path / "work").exists()


def test_a_good_load_leaves_the_folder_byte_identical(saved):
    before = folder_digest(saved)
    dashrag.load(saved).retrieve(QUERY)
    assert folder_digest(saved) == before


def damage_store_empty(folder: Path) -> None:
    store_file(folder).write_bytes(b"")


def damage_store_garbage(folder: Path) -> None:
    store_file(folder).write_bytes(b"not a database" * 100)


def damage_store_tables_dropped(folder: Path) -> None:
    with sqlite3.connect(store_file(folder)) as db:
        db.execute("DROP TABLE chunks")


def damage_store_missing(folder: Path) -> None:
    store_file(folder).unlink()


@pytest.mark.parametrize("damage", [damage_store_empty, damage_store_garbage, damage_store_tables_dropped,
                                    damage_store_missing])
def test_a_damaged_store_is_an_error_that_writes_nothing(saved, damage):
    damage(saved)
    before = folder_digest(saved)
    with pytest.raises(PersistenceError, match="store"):
        dashrag.load(saved)
    assert folder_digest(saved) == before


@pytest.mark.parametrize("ref", ["../elsewhere.sqlite", "/tmp/dashrag-elsewhere.sqlite", "store-x.sqlite/../../y"])
def test_a_manifest_naming_a_store_outside_the_folder_is_refused(saved, tmp_path, ref):
    edit_manifest(saved, store=ref)
    before = folder_digest(saved)
    with pytest.raises(PersistenceError, match="not a store file inside the folder"):
        dashrag.load(saved)
    assert folder_digest(saved) == before and not (tmp_path / "elsewhere.sqlite").exists()


def test_a_manifest_naming_a_database_url_is_refused_without_connecting(saved, tmp_path):
    target = tmp_path / "created-by-load.sqlite"
    edit_manifest(saved, store=f"sqlite:///{target}")
    with pytest.raises(PersistenceError, match="pass its URL explicitly"):
        dashrag.load(saved)
    assert not target.exists()


def test_an_explicit_store_url_is_honoured(saved, tmp_path):
    explicit = f"sqlite:///{store_file(saved)}"
    edit_manifest(saved, store="sqlite:///nowhere.sqlite")
    assert dashrag.load(saved, store_url=explicit).retrieve(QUERY)[0]


def test_an_explicit_store_url_to_a_missing_file_creates_nothing(saved, tmp_path):
    target = tmp_path / "absent.sqlite"
    with pytest.raises(PersistenceError):
        dashrag.load(saved, store_url=f"sqlite:///{target}")
    assert not target.exists()


@pytest.mark.parametrize("changes, field", [
    ({"config": ["not", "a", "tree"]}, "config"),
    ({"corpus_fingerprint": 12345}, "corpus_fingerprint"),
    ({"snapshot": "../../elsewhere"}, "snapshot"),
    ({"files": ["a.npy"]}, "files"),
    ({"files": {"nodes/root/x.npy": {"sha256": "0" * 64, "bytes": "12"}}}, "bytes"),
    ({"files": {"../outside.npy": {"sha256": "0" * 64, "bytes": 1}}}, "not a path inside the snapshot"),
    ({"format_version": True}, "format_version"),
    ({"store": 7}, "store"),
])
def test_a_manifest_field_of_the_wrong_type_is_one_clear_error(saved, changes, field):
    edit_manifest(saved, **changes)
    before = folder_digest(saved)
    with pytest.raises(PersistenceError, match="malformed manifest") as caught:
        dashrag.load(saved)
    assert field in str(caught.value)
    assert folder_digest(saved) == before


def test_a_save_removes_only_the_snapshots_dashrag_marked(saved, example_corpus, tmp_path):
    mine = [saved / "snapshot-mine", saved / "snapshot-0123456789abcdef"]  # the second matches dashrag's naming
    for folder in mine:
        folder.mkdir()
        (folder / "notes.txt").write_text("keep me")
    tree = dashrag.load(saved)
    tree.save(saved)
    tree.save(saved)
    assert all((folder / "notes.txt").read_text() == "keep me" for folder in mine)


def test_a_save_clears_what_killed_saves_left(saved):
    stale = [saved / ".dashrag.json.k1ll3d.tmp", saved / ".partial-snapshot-00000000deadbeef"]
    stale[0].write_text("{}")
    stale[1].mkdir()
    (stale[1] / "half.npy").write_bytes(b"\x93NUMPY")
    dashrag.load(saved).save(saved)
    assert not any(path.exists() for path in stale)
