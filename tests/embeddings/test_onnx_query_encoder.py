"""The float32 ONNX query encoder a saved sentence-transformers node carries: equal to torch, used after a load,
absent from folders saved before it (torch then), and a cold `dashrag query` on a dense tree imports no torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dashrag
from dashrag.core.infra import Infra
from dashrag.core.persistence import read_manifest, write_saved_folder
from dashrag.core.shared_files import read_reference, references_in
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.model import Chunk
from dashrag.embeddings import sentence_transformer
from dashrag.embeddings.onnx_query_encoder import (
    MODEL_FILES,
    RECORD_FILE,
    SHARED_LABEL,
    TOLERANCE,
    OnnxQueryEncoder,
    read_record,
)
from dashrag.embeddings.sentence_transformer import MiniLMEmbedding, TorchEncoder
from dashrag.evaluation.beir import load_split
from tests.conftest import REPO
from tests.fixtures.lock_holder import asked_while_another_process_holds
from tests.fixtures.scifact import dense_config

pytestmark = pytest.mark.slow  # exports and loads a real model

HYBRID = {"component": "ParallelRetriever", "params": {"merge_strategy": "round_robin", "children": [
    {"component": "BM25Retriever", "params": {"top_k": 5}}, dense_config(top_k=5)]}}
TORCH_MODULES = ("torch", "sentence_transformers", "transformers")


@pytest.fixture(scope="module")
def saved(subset, shared_workdir, run_cache, tmp_path_factory):
    """A hybrid tree on the SciFact subset, fitted in this process (queries on torch) and saved."""
    tree = dashrag.build(HYBRID, subset.corpus, shared_workdir, cache_dir=run_cache)
    folder = tmp_path_factory.mktemp("onnx") / "hybrid"
    tree.save(folder)
    return tree, folder


@pytest.fixture(scope="module")
def scifact_queries(scifact_dir) -> list[str]:
    return list(load_split(scifact_dir, "test").queries.values())


def embedding_node(tree) -> MiniLMEmbedding:
    return tree.get_children()[1].embedding


def test_the_exported_encoder_equals_sentence_transformers_on_scifact_queries(saved, scifact_queries):
    tree, folder = saved
    embedding = embedding_node(tree)
    torch_encoder = TorchEncoder(embedding.model(), embedding.params.max_seq_length, 32)
    torch_vectors = torch_encoder.encode(scifact_queries, normalize=True)
    node_folder = next(folder.glob("snapshot-*/nodes/root.children.1.embedding"))
    encoder = OnnxQueryEncoder.open(node_folder, batch_size=32)
    assert encoder is not None, read_record(node_folder)
    batched = encoder.encode(scifact_queries, normalize=True)
    one_by_one = np.concatenate([encoder.encode([q], normalize=True) for q in scifact_queries[:40]])
    assert len(scifact_queries) == 300
    assert np.abs(batched - torch_vectors).max() <= TOLERANCE
    assert np.abs(one_by_one - torch_vectors[:40]).max() <= TOLERANCE
    assert read_record(node_folder).max_abs_difference <= TOLERANCE


def test_a_loaded_tree_embeds_queries_with_the_export_and_answers_as_torch(saved, subset):
    tree, folder = saved
    loaded = dashrag.load(folder)
    assert embedding_node(loaded).query_encoder is not None
    assert embedding_node(tree).query_encoder is None  # fitted in process: torch is loaded anyway
    queries = list(subset.queries.values())
    for (torch_hits, _), (onnx_hits, _) in zip(tree.retrieve_batch(queries), loaded.retrieve_batch(queries)):
        assert [c.chunk.id for c in onnx_hits] == [c.chunk.id for c in torch_hits]
        np.testing.assert_allclose([c.score for c in onnx_hits], [c.score for c in torch_hits], atol=1e-5)
    dense = loaded.get_children()[1]
    assert dense.embedding.documents_embedded == 0


def test_window_averaged_long_queries_match_torch(saved):
    tree, folder = saved
    node_folder = next(folder.glob("snapshot-*/nodes/root.children.1.embedding"))
    long_query = " ".join(f"Sentence {i} asks about protein folding in yeast cells." for i in range(60))
    window = MiniLMEmbedding({"max_seq_length": 128, "overflow_strategy": "window_average"})
    torch_encoder = TorchEncoder(embedding_node(tree).model(), window.params.max_seq_length, 32)
    torch_vector = window._window_average([long_query], torch_encoder)
    onnx_vector = window._window_average([long_query], OnnxQueryEncoder.open(node_folder, batch_size=32))
    assert np.abs(onnx_vector - torch_vector).max() <= TOLERANCE


def without_query_encoder(folder: Path, target: Path) -> Path:
    """The folder as dashrag wrote it before the export existed: the embedding node's folder empty."""
    manifest = read_manifest(folder)
    snapshot = folder / manifest["snapshot"]

    def write_nodes(new_snapshot: Path) -> None:
        shutil.copytree(snapshot / "nodes", new_snapshot / "nodes")
        for path in (new_snapshot / "nodes").rglob("query_encoder*"):
            path.unlink()
        # the other nodes' shared files (the BM25 child's base segments) stay where their references point
        for relative in references_in(new_snapshot):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(folder / relative, target / relative)

    shutil.copy(folder / manifest["store"], target / manifest["store"])
    write_saved_folder(target, write_nodes, {k: manifest[k] for k in ("config", "corpus_fingerprint", "store")})
    return target


def test_a_tree_saved_before_the_export_loads_and_embeds_queries_with_torch(saved, subset, tmp_path):
    tree, folder = saved
    old = dashrag.load(without_query_encoder(folder, tmp_path))
    assert embedding_node(old).query_encoder is None
    queries = list(subset.queries.values())[:5]
    for (torch_hits, _), (old_hits, _) in zip(tree.retrieve_batch(queries), old.retrieve_batch(queries)):
        assert [c.chunk.id for c in old_hits] == [c.chunk.id for c in torch_hits]
    old.save(tmp_path / "resaved")  # a re-save exports it
    assert embedding_node(dashrag.load(tmp_path / "resaved")).query_encoder is not None


def test_a_refused_export_is_recorded_and_queries_stay_on_torch(saved, tmp_path):
    _, folder = saved
    node_folder = next(folder.glob("snapshot-*/nodes/root.children.1.embedding"))
    record = read_record(node_folder).model_copy(update={"exported": False, "reason": "tested refusal"})
    (tmp_path / RECORD_FILE).write_text(record.model_dump_json())
    assert OnnxQueryEncoder.open(tmp_path, batch_size=32) is None


def test_every_export_file_is_in_the_manifest(saved):
    _, folder = saved
    manifest = read_manifest(folder)
    assert f"nodes/root.children.1.embedding/{RECORD_FILE}" in manifest["files"]
    assert f"nodes/root.children.1.embedding/{SHARED_LABEL}.shared.json" in manifest["files"]
    node_folder = next(folder.glob("snapshot-*/nodes/root.children.1.embedding"))
    digest = read_reference(node_folder, SHARED_LABEL).digest  # the model files: once, in the shared store
    exported = sorted(rel for rel in manifest["shared"] if rel.split("/")[1] == digest)
    assert exported == sorted(f"models/{digest}/{name}" for name in MODEL_FILES)


def test_a_cold_dense_query_process_imports_no_torch(saved, tmp_path):
    _, folder = saved
    report = tmp_path / "modules.json"
    driver = ("import json, sys\nfrom dashrag.cli.main import app\ntry:\n    app(sys.argv[2:], prog_name='dashrag')\n"
              "except SystemExit as exit:\n    code = exit.code\n"
              "json.dump({'code': code, 'modules': sorted(sys.modules)}, open(sys.argv[1], 'w'))\n")
    answered = subprocess.run([sys.executable, "-c", driver, str(report), "query", str(folder),
                               "vitamin D and cancer risk", "--json"], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    seen = json.loads(report.read_text())
    assert seen["code"] in (0, None), answered.stderr
    assert json.loads(answered.stdout)["results"]
    assert sorted({m.split(".")[0] for m in seen["modules"]} & set(TORCH_MODULES)) == []
    assert "onnxruntime" in {m.split(".")[0] for m in seen["modules"]}


# Another process exporting into the cache: it holds the export cache's lock, is told to write its export (a
# refusal record: enough for a cache entry that needs no new export) and then lets the lock go.
EXPORTING_PROCESS = """
import sys
from pathlib import Path
from dashrag.core.persistence import atomic_write_json, save_lock
from dashrag.embeddings.onnx_export import refuse
from dashrag.embeddings.onnx_query_encoder import RECORD_FILE
entry, cache_key = Path(sys.argv[1]), sys.argv[2]
with save_lock(entry.parent):
    print("holding", flush=True)
    sys.stdin.readline()
    entry.mkdir()
    atomic_write_json(entry / RECORD_FILE, refuse(cache_key, "the other process's export").model_dump(mode="json"))
"""


def test_an_export_waits_for_another_process_exporting_into_the_same_cache_and_takes_its_export(tmp_path, monkeypatch):
    """Processes sharing an embedding cache (the service's build workers, builds given one ``cache_dir``) export a
    model once: a save that finds another process exporting waits for it and takes its export, where it used to
    export the model again and fail to rename its folder over the other's."""
    # This process's own earlier exports (another test's, of the same model and length, on this worker) would be
    # taken first, without the wait this test is about: a process that never exported it.
    monkeypatch.setattr(sentence_transformer, "_exports", {})
    embedding = MiniLMEmbedding({"max_seq_length": 32})
    stages: list[str] = []
    chunks = ChunkSet([Chunk(id=0, document_id="d", position=0, text="t")])
    embedding.inject_infra(Infra(env_path=tmp_path, chunks=chunks,
                                 progress=lambda stage, done=0, total=None: stages.append(stage)))
    entry = embedding.export_cache_entry()
    taken = asked_while_another_process_holds(EXPORTING_PROCESS, [str(entry), embedding.cache_key()],
                                              embedding._exported, timeout=300)
    assert taken == entry and stages == []  # nothing exported here
    assert read_record(entry).reason == "the other process's export"
