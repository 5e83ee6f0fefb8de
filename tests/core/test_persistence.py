"""Saved folders: identical answers after load, no refit, and clear errors that change nothing."""

import hashlib
import json
from pathlib import Path

import pytest

import dashrag
from dashrag.core import persistence
from dashrag.errors import PersistenceError

CONFIG = {"component": "TFIDFRetriever", "params": {"top_k": 5}}
QUERIES = ["how do rankers saturate term frequency", "dense vectors and cosine", "filter before top-k"]


def tree_digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def saved(tmp_path, example_corpus):
    retriever = dashrag.build(CONFIG, example_corpus, tmp_path / "work")
    folder = retriever.save(tmp_path / "saved")
    return retriever, folder


def state_file(folder: Path, suffix: str) -> Path:
    manifest = json.loads((folder / "dashrag.json").read_text())
    return next(folder / manifest["snapshot"] / rel for rel in manifest["files"] if rel.endswith(suffix))


def test_load_answers_exactly_as_before_saving(saved):
    retriever, folder = saved
    loaded = dashrag.load(folder)
    for q in QUERIES:
        assert loaded.retrieve(q)[0] == retriever.retrieve(q)[0]
    assert loaded.to_config() == retriever.to_config()


def test_load_does_not_refit(saved, monkeypatch):
    _, folder = saved

    def refit(self):
        raise AssertionError("load must not fit")

    monkeypatch.setattr(type(dashrag.build_component(CONFIG)), "_fit", refit)
    dashrag.load(folder).retrieve(QUERIES[0])


def test_missing_folder(tmp_path):
    with pytest.raises(PersistenceError, match="no such saved retriever folder"):
        dashrag.load(tmp_path / "nope")


def test_truncated_state_file_is_an_error_that_changes_nothing(saved):
    _, folder = saved
    target = state_file(folder, "matrix.data.npy")
    target.write_bytes(target.read_bytes()[:-16])
    before = tree_digest(folder)
    with pytest.raises(PersistenceError, match="truncated or edited"):
        dashrag.load(folder)
    assert tree_digest(folder) == before


def test_edited_state_file_is_an_error(saved):
    _, folder = saved
    target = state_file(folder, "vocabulary.json")
    target.write_text(target.read_text().replace('"bm25"', '"bm26"'))
    with pytest.raises(PersistenceError, match="checksum"):
        dashrag.load(folder)


def test_newer_format_version_is_refused(saved):
    _, folder = saved
    manifest_path = folder / "dashrag.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["format_version"] = persistence.FORMAT_VERSION + 1
    manifest_path.write_text(json.dumps(manifest))
    before = tree_digest(folder)
    newest = persistence.FORMAT_VERSION
    with pytest.raises(PersistenceError, match=f"format version {newest + 1}; this dashrag reads versions 1..{newest}"):
        dashrag.load(folder)
    assert tree_digest(folder) == before


def test_folder_saved_for_another_corpus_is_refused(saved, tmp_path, scifact_subset_file):
    retriever, folder = saved
    other = dashrag.build(CONFIG, scifact_subset_file, tmp_path / "other")
    other_folder = other.save(tmp_path / "other_saved")
    manifest = json.loads((other_folder / "dashrag.json").read_text())
    with pytest.raises(PersistenceError, match="another corpus"):
        dashrag.load(folder, store_url=f"sqlite:///{other_folder / manifest['store']}")


def test_a_killed_save_leaves_the_previous_save_intact(saved, monkeypatch):
    retriever, folder = saved
    before = tree_digest(folder)

    def die(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-save")

    monkeypatch.setattr(persistence, "save_sparse", die)
    monkeypatch.setattr("dashrag.retrievers.tfidf.save_sparse", die)
    with pytest.raises(KeyboardInterrupt):
        retriever.save(folder)
    assert tree_digest(folder) == before
    assert dashrag.load(folder).retrieve(QUERIES[0])[0] == retriever.retrieve(QUERIES[0])[0]


def current_snapshot(folder: Path) -> str:
    return json.loads((folder / "dashrag.json").read_text())["snapshot"]


def test_resaving_keeps_the_new_and_the_replaced_snapshot_only(saved):
    retriever, folder = saved
    first = current_snapshot(folder)
    retriever.save(folder)
    second = current_snapshot(folder)
    retriever.save(folder)
    snapshots = {p.name for p in folder.glob("snapshot-*")}
    assert snapshots == {second, current_snapshot(folder)} and first not in snapshots


def test_object_arrays_are_never_saved(tmp_path):
    import numpy as np

    with pytest.raises(TypeError):
        persistence.save_array(tmp_path / "x.npy", np.array([{"a": 1}], dtype=object))


def test_atomic_directory_publishes_the_whole_folder_at_once(tmp_path):
    target = tmp_path / "model"
    with persistence.atomic_directory(target) as staging:
        (staging / "weights").write_text("new")
        assert not target.exists()  # nothing visible until the block ends
    assert (target / "weights").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_atomic_directory_replaces_an_old_folder_whole(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    (target / "stale").write_text("old")
    with persistence.atomic_directory(target) as staging:
        (staging / "weights").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["weights"]
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_a_failure_inside_atomic_directory_keeps_the_old_folder_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    (target / "weights").write_text("old")
    with pytest.raises(RuntimeError):
        with persistence.atomic_directory(target) as staging:
            (staging / "weights").write_text("half")
            raise RuntimeError("killed")
    assert (target / "weights").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


@pytest.mark.parametrize("config", [{"component": "BM25Retriever", "params": {"top_k": 5}},
                                    {"component": "DenseEmbeddingRetriever", "params": {
                                        "top_k": 5, "embedding": {"component": "MiniLMOnnxEmbedding"}}}])
def test_a_folder_saved_before_the_index_sub_component_existed_still_loads(config, tmp_path, example_corpus):
    """Such a folder has no state folder for the stateless ``index`` node (its parent saves the index's state)."""
    built = dashrag.build(config, example_corpus, tmp_path / "work")
    folder = built.save(tmp_path / "saved")
    manifest = json.loads((folder / "dashrag.json").read_text())
    index_dir = folder / manifest["snapshot"] / "nodes" / "root.index"
    assert index_dir.is_dir() and not any(index_dir.iterdir())
    index_dir.rmdir()  # the layout of a folder saved before `index` was a field
    loaded = dashrag.load(folder)
    try:
        assert [[c.id for c in hits] for hits, _ in loaded.retrieve_batch(QUERIES)] == \
            [[c.id for c in hits] for hits, _ in built.retrieve_batch(QUERIES)]
    finally:
        loaded.close()
        built.close()
