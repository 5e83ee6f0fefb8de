"""The document-vector cache: one embedding per (chunks, model, vector params), shared, atomic, self-healing."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dashrag.embeddings.cache as cache
from dashrag.core.persistence import save_array
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.model import Chunk
from dashrag.embeddings.e5_small import E5SmallEmbedding
from tests.fixtures.lock_holder import asked_while_another_process_holds

TEXTS = ["Aspirin lowers the risk of stroke.", "Coffee and sleep quality.", "Exercise improves memory.",
         "Vitamin C and the common cold.", "Gut bacteria shape immunity.", "Salt intake and blood pressure."]


def chunk_set(texts=TEXTS) -> ChunkSet:
    return ChunkSet(Chunk(id=i, document_id=f"d{i}", position=0, text=t) for i, t in enumerate(texts))


def test_first_call_embeds_and_writes_the_npy_and_its_sidecar(tmp_path):
    chunks, embedding = chunk_set(), E5SmallEmbedding({})
    vectors = cache.document_vectors(embedding, chunks, tmp_path)
    path = cache.cache_path(tmp_path, chunks.fingerprint, embedding)
    assert embedding.documents_embedded == len(TEXTS)
    np.testing.assert_array_equal(np.load(path), vectors)
    sidecar = json.loads(path.with_suffix(".json").read_text())
    assert sidecar["chunks_fingerprint"] == chunks.fingerprint and sidecar["shape"] == [6, 384]


def test_a_second_component_with_the_same_model_reads_the_cache(tmp_path):
    chunks = chunk_set()
    first = cache.document_vectors(E5SmallEmbedding({}), chunks, tmp_path)
    other = E5SmallEmbedding({"batch_size": 2})  # batch size does not change vectors: same entry
    second = cache.document_vectors(other, chunks, tmp_path)
    assert other.documents_embedded == 0
    np.testing.assert_array_equal(first, second)
    assert len(list((tmp_path / cache.CACHE_FOLDER).glob("*.npy"))) == 1


def test_the_key_depends_on_the_chunks_and_the_model():
    embedding = E5SmallEmbedding({})
    base = cache.cache_key(chunk_set().fingerprint, embedding)
    assert cache.cache_key(chunk_set(TEXTS[:-1]).fingerprint, embedding) != base
    assert cache.cache_key(chunk_set().fingerprint, E5SmallEmbedding({"variant": "enpt"})) != base


def test_a_cache_file_of_the_wrong_shape_is_ignored_and_rewritten(tmp_path):
    chunks, embedding = chunk_set(), E5SmallEmbedding({})
    path = cache.cache_path(tmp_path, chunks.fingerprint, embedding)
    save_array(path, np.zeros((2, 384), dtype=np.float32))
    vectors = cache.document_vectors(embedding, chunks, tmp_path)
    assert vectors.shape == (6, 384) and embedding.documents_embedded == 6
    assert np.load(path).shape == (6, 384)


def test_an_unreadable_cache_file_is_ignored(tmp_path):
    chunks, embedding = chunk_set(), E5SmallEmbedding({})
    path = cache.cache_path(tmp_path, chunks.fingerprint, embedding)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not an npy file")
    assert cache.document_vectors(embedding, chunks, tmp_path).shape == (6, 384)


# Another process embedding the same chunks into the cache: it holds the entry's lock, is told to write its vectors
# (a distinctive matrix, ones, that no model gives) and then lets the lock go.
EMBEDDING_PROCESS = """
import sys
from pathlib import Path
import numpy as np
from filelock import FileLock
from dashrag.core.persistence import save_array
path, rows = Path(sys.argv[1]), int(sys.argv[2])
path.parent.mkdir(parents=True, exist_ok=True)
with FileLock(str(path.with_suffix(".lock"))):
    print("holding", flush=True)
    sys.stdin.readline()
    save_array(path, np.ones((rows, 384), dtype=np.float32))
"""


def test_vectors_another_process_is_embedding_are_waited_for_and_read_not_embedded_again(tmp_path):
    """Processes sharing a cache (the service's build workers, builds given one ``--cache-dir``) embed the same
    chunks once: a build that finds another process embedding them waits for its vectors and reads them."""
    chunks, embedding = chunk_set(), E5SmallEmbedding({})
    path = cache.cache_path(tmp_path, chunks.fingerprint, embedding)
    vectors = asked_while_another_process_holds(
        EMBEDDING_PROCESS, [str(path), str(len(TEXTS))],
        lambda: cache.document_vectors(embedding, chunks, tmp_path), timeout=120)
    assert embedding.documents_embedded == 0
    np.testing.assert_array_equal(vectors, np.ones((len(TEXTS), 384), dtype=np.float32))


def test_blocked_embedding_equals_one_call(monkeypatch):
    monkeypatch.setattr(cache, "BLOCK_BATCHES", 2)
    embedding = E5SmallEmbedding({"batch_size": 1})  # three blocks of two texts
    np.testing.assert_array_equal(
        cache.embed_with_progress(embedding, TEXTS), E5SmallEmbedding({}).embed_documents(TEXTS)
    )


def test_long_runs_show_a_progress_bar(monkeypatch, capsys):
    monkeypatch.setattr(cache, "PROGRESS_MIN_TEXTS", 1)
    cache.embed_with_progress(E5SmallEmbedding({}), TEXTS, "embedding test chunks")
    assert "embedding test chunks" in capsys.readouterr().err


@pytest.mark.parametrize("count", [0, 1])
def test_tiny_inputs_keep_the_matrix_shape(count):
    assert cache.embed_with_progress(E5SmallEmbedding({}), TEXTS[:count]).shape == (count, 384)
