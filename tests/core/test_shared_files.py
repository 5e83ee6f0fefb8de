"""A model stored once per saved folder (core/shared_files): a tree with two dense nodes on one model, indexed
through the CLI as a user does (the export cache inside --out), holds one copy of the ONNX export; both loaded
nodes use that one copy; an update keeps one; a tampered copy is refused by name; a folder saved before the
shared store (model files in the node's folder) still loads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import dashrag
from dashrag.cli.main import app
from dashrag.core.persistence import read_manifest, write_saved_folder
from dashrag.documents.model import SourceDocument
from dashrag.embeddings.onnx_query_encoder import MODEL_FILES, SHARED_LABEL
from dashrag.errors import PersistenceError
from tests.conftest import EXAMPLE_CORPUS, REPO
from tests.fixtures.scifact import dense_config

pytestmark = pytest.mark.slow  # exports a real model to ONNX in a fresh process

TWO_DENSE = {"component": "ParallelRetriever", "params": {"merge_strategy": "round_robin", "children": [
    {"component": "BM25Retriever", "params": {"top_k": 5}},
    dense_config(top_k=5), dense_config(metric="dot", top_k=3)]}}
QUERY = "how do dense vectors find similar passages"


def dashrag_cli(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dashrag.cli.main", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)


def invoke(*args: object) -> Result:
    """The ``dashrag`` command in this process (typer's runner)."""
    return CliRunner().invoke(app, [str(a) for a in args])


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.fixture(scope="module")
def index_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """``dashrag index`` of the two-dense tree over the example corpus, in a fresh process (nothing cached): the
    finished process and the folder it wrote."""
    base = tmp_path_factory.mktemp("shared")
    config = base / "two_dense.json"
    config.write_text(json.dumps(TWO_DENSE))
    out = base / "trees" / "two_dense"
    result = dashrag_cli("index", config, "--corpus", EXAMPLE_CORPUS, "--out", out)
    assert result.returncode == 0, result.stderr
    return result, out


@pytest.fixture(scope="module")
def indexed(index_run) -> Path:
    return index_run[1]


def test_a_dense_index_prints_no_library_progress_bar(index_run):
    """The libraries under a dense build (sentence-transformers' encode, transformers' weight loading) print
    nothing of their own: stderr stays empty, stdout ends with dashrag's one summary line. (This index loads and
    exports the model and embeds the corpus in a fresh process: the test that ran `dashrag index semantic` for
    it alone, in tests/cli/test_help.py, was folded in here, docs/testing.md "Fourth pass".)"""
    result, _ = index_run
    assert result.stderr == "" and "Loading weights" not in result.stdout
    assert result.stdout.splitlines()[-1].startswith("indexed ")


def model_folder(folder: Path) -> Path:
    """The shared folder of the model (the folder's shared store also holds the BM25 node's base segments,
    docs/scale.md "Segments of the keyword index")."""
    return next(folder.glob("models/*/query_encoder.weights")).parent


def copy_of(folder: Path, target: Path) -> Path:
    shutil.copytree(folder, target)
    return target


def test_the_indexed_folder_holds_the_model_once(indexed):
    weights = sorted(indexed.rglob("query_encoder.weights"))
    graphs = sorted(indexed.rglob("query_encoder.onnx"))
    assert [p.relative_to(indexed).parts[0] for p in weights + graphs] == ["models", "models"]
    assert weights[0].parent == graphs[0].parent
    total, model = folder_bytes(indexed), weights[0].stat().st_size
    assert model > 50_000_000  # the float32 MiniLM export
    assert total < 1.2 * model  # was twice the model (the export cache and each node's copy)
    references = sorted(indexed.glob(f"snapshot-*/nodes/*/{SHARED_LABEL}.shared.json"))
    assert [p.parent.name for p in references] == ["root.children.1.embedding", "root.children.2.embedding"]
    assert {json.loads(p.read_text())["digest"] for p in references} == {weights[0].parent.name}


def test_both_dense_nodes_load_the_one_model(indexed):
    loaded = dashrag.load(indexed)
    first, second = (child.embedding.query_encoder for child in loaded.get_children()[1:])
    assert first is not None and second is not None
    assert first.folder == second.folder == model_folder(indexed)
    assert first.session() is second.session()  # one onnxruntime session for the process
    hits, _ = loaded.retrieve(QUERY)
    assert hits and loaded.get_children()[1].embedding.documents_embedded == 0


def test_a_tree_indexed_beside_it_shares_the_model_on_disk(indexed):
    """Two trees of one folder (a service's --trees, a user's saves side by side): the model is on disk once.
    The second ``dashrag index`` and the query run through typer's runner in this process: a fresh process is
    ``index_run``'s (docs/testing.md, "Fifth pass: CLI, core and the rest")."""
    config = indexed.parent.parent / "one_dense.json"
    config.write_text(json.dumps(dense_config(top_k=5)))
    beside = indexed.parent / "one_dense"
    result = invoke("index", config, "--corpus", EXAMPLE_CORPUS, "--out", beside)
    assert result.exit_code == 0, result.output
    (mine,), (theirs,) = beside.rglob("query_encoder.weights"), indexed.rglob("query_encoder.weights")
    assert mine.stat().st_ino == theirs.stat().st_ino
    answered = invoke("query", beside, QUERY, "--json")
    assert answered.exit_code == 0 and json.loads(answered.stdout)["results"], answered.output


def test_an_update_keeps_one_copy_and_the_same_shared_folder(indexed, tmp_path):
    folder = copy_of(indexed, tmp_path / "two_dense")
    def model_files(manifest: dict) -> dict:
        return {rel: record for rel, record in manifest["shared"].items() if rel.split("/")[-1] in MODEL_FILES}

    before = model_files(read_manifest(folder))
    dashrag.update(folder, add=[SourceDocument(id="notes/extra.md", text="Dense vectors and cosine similarity.")])
    dashrag.update(folder, remove=["notes/extra.md"])
    assert model_files(read_manifest(folder)) == before  # (the BM25 node's base segments follow its updates)
    assert len(list(folder.rglob("query_encoder.weights"))) == 1
    assert folder_bytes(folder) < 1.2 * next(folder.rglob("query_encoder.weights")).stat().st_size


def test_a_tampered_model_is_refused_naming_the_file(indexed, tmp_path):
    folder = copy_of(indexed, tmp_path / "tampered")
    weights = next(folder.rglob("query_encoder.weights"))
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: only the checksum can tell
    weights.write_bytes(bytes(data))
    with pytest.raises(PersistenceError, match="shared model file checksum differs"):
        dashrag.load(folder)
    answered = dashrag_cli("query", folder, QUERY)
    assert answered.returncode != 0
    assert "query_encoder.weights" in answered.stderr and "checksum differs" in answered.stderr
    assert "Traceback" not in answered.stderr + answered.stdout


def test_a_missing_shared_folder_is_refused(indexed, tmp_path):
    folder = copy_of(indexed, tmp_path / "missing")
    shutil.rmtree(model_folder(folder))
    with pytest.raises(PersistenceError, match="shared model file missing"):
        dashrag.load(folder)


def old_layout(folder: Path, target: Path) -> Path:
    """The folder as dashrag wrote it before the shared store: each node's model files in its own folder."""
    manifest = read_manifest(folder)
    snapshot = folder / manifest["snapshot"]

    def write_nodes(new_snapshot: Path) -> None:
        shutil.copytree(snapshot / "nodes", new_snapshot / "nodes")
        for reference in (new_snapshot / "nodes").rglob(f"{SHARED_LABEL}.shared.json"):
            shared = folder / "models" / json.loads(reference.read_text())["digest"]
            for name in MODEL_FILES:
                shutil.copyfile(shared / name, reference.parent / name)
            reference.unlink()

    target.mkdir()
    for reference in snapshot.rglob("*.shared.json"):  # the BM25 node's base segments stay shared (a later layout)
        if reference.name != f"{SHARED_LABEL}.shared.json":
            digest = json.loads(reference.read_text())["digest"]
            shutil.copytree(folder / "models" / digest, target / "models" / digest, dirs_exist_ok=True)
    shutil.copy(folder / manifest["store"], target / manifest["store"])
    write_saved_folder(target, write_nodes, {k: manifest[k] for k in ("config", "corpus_fingerprint", "store")})
    return target


def test_a_folder_saved_before_the_shared_store_loads_and_a_re_save_shares(indexed, tmp_path):
    old = old_layout(indexed, tmp_path / "old")
    shared = read_manifest(old).get("shared", {})
    assert not [rel for rel in shared if rel.split("/")[-1] in MODEL_FILES]
    assert not list(old.rglob("models/*/*.weights"))
    loaded = dashrag.load(old)
    encoders = [child.embedding.query_encoder for child in loaded.get_children()[1:]]
    assert [e.folder.name for e in encoders] == ["root.children.1.embedding", "root.children.2.embedding"]
    current, _ = dashrag.load(indexed).retrieve(QUERY)
    hits, _ = loaded.retrieve(QUERY)
    assert [h.chunk.id for h in hits] == [h.chunk.id for h in current]
    loaded.save(old)  # the next save puts the model into the shared store, once
    snapshot = old / read_manifest(old)["snapshot"]  # (the previous one stays until the next save: grace rule)
    assert not list(snapshot.rglob("query_encoder.weights")) and len(list(old.glob("models/*/*.weights"))) == 1
    assert dashrag.load(old).get_children()[2].embedding.query_encoder.folder.parent.name == "models"
