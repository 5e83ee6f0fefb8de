"""The saved folder's shared store (core/shared_files) through the save and load machinery, on plain files:
equal bytes from two nodes stored once, checked on load, a failed save leaving the previous tree and no file the
next save keeps, a tampered file refused and healed by the next save from its source, a forged manifest refused.
(The real user, a dense tree's ONNX export, is tests/core/test_shared_files.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dashrag.core.persistence import read_consistently, read_manifest, write_saved_folder
from dashrag.core.shared_files import REFERENCE_SUFFIX, share_files, shared_folder
from dashrag.errors import PersistenceError

FIELDS = {"config": {"component": "BM25Retriever", "params": {}}, "corpus_fingerprint": "f" * 16}


@pytest.fixture()
def model(tmp_path) -> Path:
    """A model's files as a node would find them in its export cache."""
    source = tmp_path / "export"
    source.mkdir()
    (source / "graph.onnx").write_bytes(b"graph" * 1000)
    (source / "weights.bin").write_bytes(bytes(range(256)) * 400)
    return source


def nodes_sharing(source: Path, names: tuple[str, ...] = ("a", "b")):
    def write_nodes(snapshot: Path) -> None:
        for name in names:
            node = snapshot / "nodes" / name
            node.mkdir(parents=True)
            (node / "state.json").write_text("{}")
            share_files(node, "model", source, ["graph.onnx", "weights.bin"])
    return write_nodes


def load_shared(folder: Path) -> list[Path | None]:
    return read_consistently(folder, lambda manifest, snapshot: [
        shared_folder(snapshot / "nodes" / name, "model") for name in ("a", "b")])


def test_two_nodes_store_equal_bytes_once_and_the_load_finds_them(tmp_path, model):
    folder = tmp_path / "saved"
    write_saved_folder(folder, nodes_sharing(model), FIELDS)
    (digest,) = [p.name for p in (folder / "models").iterdir()]
    assert sorted(read_manifest(folder)["shared"]) == [f"models/{digest}/graph.onnx", f"models/{digest}/weights.bin"]
    first, second = load_shared(folder)
    assert first == second == folder / "models" / digest
    assert (first / "weights.bin").read_bytes() == (model / "weights.bin").read_bytes()
    snapshot = folder / read_manifest(folder)["snapshot"]
    assert not list(snapshot.rglob("weights.bin"))  # the nodes hold references, not copies


def test_a_failed_save_keeps_the_previous_tree_and_the_next_save_removes_what_it_left(tmp_path, model):
    folder = tmp_path / "saved"
    write_saved_folder(folder, nodes_sharing(model), FIELDS)
    before = read_manifest(folder)
    other = tmp_path / "other"
    other.mkdir()
    (other / "graph.onnx").write_bytes(b"another model")
    (other / "weights.bin").write_bytes(b"other weights")

    def fails_after_sharing(snapshot: Path) -> None:
        nodes_sharing(other)(snapshot)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_saved_folder(folder, fails_after_sharing, FIELDS)
    assert read_manifest(folder) == before and len(load_shared(folder)) == 2
    assert len(list((folder / "models").iterdir())) == 2  # the failed save's folder, named by no manifest
    write_saved_folder(folder, nodes_sharing(model), FIELDS)
    assert [p.name for p in (folder / "models").iterdir()] == [rel.split("/")[1] for rel in before["shared"]][:1]


def test_a_tampered_shared_file_is_refused_by_name_and_the_next_save_restores_it(tmp_path, model):
    folder = tmp_path / "saved"
    write_saved_folder(folder, nodes_sharing(model), FIELDS)
    weights = next((folder / "models").glob("*/weights.bin"))
    data = bytearray(weights.read_bytes())
    data[7] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(PersistenceError, match=r"weights\.bin: shared model file checksum differs from the manifest"):
        load_shared(folder)
    write_saved_folder(folder, nodes_sharing(model), FIELDS)  # equal address, other bytes: replaced from the source
    assert weights.read_bytes() == (model / "weights.bin").read_bytes() and len(load_shared(folder)) == 2


def test_a_manifest_naming_a_shared_file_outside_the_store_is_refused(tmp_path, model):
    folder = tmp_path / "saved"
    write_saved_folder(folder, nodes_sharing(model), FIELDS)
    manifest = json.loads((folder / "dashrag.json").read_text())
    manifest["shared"] = {"../outside/weights.bin": next(iter(manifest["shared"].values()))}
    (folder / "dashrag.json").write_text(json.dumps(manifest))
    with pytest.raises(PersistenceError, match="is not a file of the shared store"):
        read_manifest(folder)


def test_a_reference_whose_digest_does_not_match_its_files_is_refused_at_save(tmp_path, model):
    def forged(snapshot: Path) -> None:
        nodes_sharing(model, ("a",))(snapshot)
        reference = snapshot / "nodes" / "a" / f"model{REFERENCE_SUFFIX}"
        data = json.loads(reference.read_text())
        data["digest"] = "0" * 64
        reference.write_text(json.dumps(data))

    with pytest.raises(PersistenceError, match="the digest does not match the files it lists"):
        write_saved_folder(tmp_path / "saved", forged, FIELDS)
    assert not (tmp_path / "saved" / "dashrag.json").exists()


def test_saved_folders_side_by_side_share_a_file_on_disk_and_each_stays_whole(tmp_path, model):
    first, second = tmp_path / "trees" / "first", tmp_path / "trees" / "second"
    write_saved_folder(first, nodes_sharing(model), FIELDS)
    write_saved_folder(second, nodes_sharing(model), FIELDS)
    (digest,) = [p.name for p in (second / "models").iterdir()]
    for name in ("graph.onnx", "weights.bin"):
        mine, theirs = second / "models" / digest / name, first / "models" / digest / name
        assert mine.stat().st_ino == theirs.stat().st_ino and mine.stat().st_nlink == 2  # one copy on disk
    assert read_manifest(second)["shared"] == read_manifest(first)["shared"]
    shutil.rmtree(first)  # deleting a tree unlinks its names only
    (loaded, _) = load_shared(second)
    assert (loaded / "weights.bin").read_bytes() == (model / "weights.bin").read_bytes()


def test_a_sibling_file_edited_in_place_is_not_linked_but_copied_from_the_source(tmp_path, model):
    first, second = tmp_path / "trees" / "first", tmp_path / "trees" / "second"
    write_saved_folder(first, nodes_sharing(model), FIELDS)
    (edited,) = (first / "models").glob("*/weights.bin")
    data = bytearray(edited.read_bytes())
    data[3] ^= 1
    edited.write_bytes(bytes(data))
    write_saved_folder(second, nodes_sharing(model), FIELDS)
    (mine,) = (second / "models").glob("*/weights.bin")
    assert mine.stat().st_ino != edited.stat().st_ino
    assert mine.read_bytes() == (model / "weights.bin").read_bytes() and len(load_shared(second)) == 2
