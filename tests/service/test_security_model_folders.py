"""A client's model folder is refused before it is looked at, and validation reads no model file (issue 38).

``POST /trees/validate`` is open to every origin, so a page could have the service hash any folder it
names (``/usr/share``: 726 MB in 13 s). The served app is asked to validate and to build trees naming a
folder while the kernel (inotify) watches it: a folder outside the data root is not opened at all, not
even listed; one inside is checked for existence only, its files unread until a build needs them."""

from __future__ import annotations

from pathlib import Path

import httpx
from inotify_simple import INotify
from inotify_simple import flags as events

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.service.conftest import LoopbackServer

WATCHED = events.OPEN | events.ACCESS


def model_folder(where: Path) -> Path:
    where.mkdir(parents=True)
    (where / "config.json").write_text('{"model_type": "bert"}')
    (where / "model.safetensors").write_bytes(b"\0" * 4096)
    return where


def dense_tree(model: Path) -> dict:
    return {"component": "DenseEmbeddingRetriever", "params": {
        "embedding": {"component": "SentenceTransformerEmbedding", "params": {"model": str(model)}}}}


def opened(watch: INotify) -> list[str]:
    return [f"{event.name or '.'} {[f.name for f in events.from_mask(event.mask)]}" for event in watch.read(timeout=0)]


def watching(folder: Path) -> INotify:
    watch = INotify()
    watch.add_watch(folder, WATCHED)
    return watch


def test_a_model_folder_outside_the_data_root_is_refused_without_being_opened(tmp_path):
    data_root, trees = tmp_path / "data", tmp_path / "trees"
    (data_root / "corpus").mkdir(parents=True)
    (data_root / "corpus" / "a.md").write_text("a document")
    trees.mkdir()
    outside = model_folder(tmp_path / "elsewhere" / "model")
    watch = watching(outside)
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees, data_root=data_root))) as server:
        validated = httpx.post(f"{server.url}/trees/validate", json=dense_tree(outside)).json()
        built = httpx.post(f"{server.url}/trees", json={"name": "m", "config": dense_tree(outside),
                                                        "corpus_path": "corpus"})
        climbing = httpx.post(f"{server.url}/trees/validate", json=dense_tree(data_root / ".." / "elsewhere" /
                                                                             "model")).json()
    seen_by_the_service = opened(watch)
    (outside / "config.json").read_text()  # the watch does see an open: the check above can fail
    assert opened(watch)
    problems = {e["path"]: e["message"] for e in validated["errors"]}
    assert "outside the data root" in problems["params.embedding.params.model"]
    assert built.status_code == 422 and "outside the data root" in built.text
    assert "outside the data root" in {e["path"]: e["message"] for e in climbing["errors"]}[
        "params.embedding.params.model"]
    assert seen_by_the_service == []


def test_validating_a_model_folder_under_the_data_root_reads_none_of_its_files(tmp_path):
    trees = tmp_path / "trees"
    trees.mkdir()
    inside = model_folder(tmp_path / "data" / "models" / "mine")
    watch = watching(inside)
    with LoopbackServer(create_app(ServiceSettings(trees_dir=trees, data_root=tmp_path / "data"))) as server:
        answer = httpx.post(f"{server.url}/trees/validate", json=dense_tree(inside)).json()
    assert answer == {"valid": True, "errors": []}
    assert opened(watch) == []
