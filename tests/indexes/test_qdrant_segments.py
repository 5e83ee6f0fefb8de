"""Segments of collections on Qdrant Edge (``dashrag/indexes/qdrant_segments.py``, docs/scale.md "Dense updates on
Qdrant Edge"): an update writes a small delta collection and hides the base's removed points, never opening the
base; the updated tree answers as a rebuild (exact indexes), a reader of the old tree answers as before while an
update runs, a kill -9 at any moment of ``dashrag add`` leaves the old or the new tree, and a compaction writes one
collection again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import dashrag
from dashrag.documents.corpus import Corpus
from dashrag.indexes.engine import EngineFilter
from dashrag.indexes.qdrant_edge_store import EdgeStore
from dashrag.indexes.qdrant_segments import DeltaVectors, Segments, merge_hits
from dashrag.indexes.qdrant_store import DenseLayout, Layout, SearchOptions
from tests.cli.conftest import answers_of, invoke
from tests.conftest import folder_digest
from tests.core.test_updating import (
    DENSE,
    QUERIES,
    answers,
    assert_same_answers,
    changed,
    check_property,
    rebuilt_answers,
    saved_tree,
    steps,
)
from tests.fixtures.save_phases import kill_in_phase
from tests.indexes.conftest import dense_tree
from tests.indexes.test_engine_updates import two_shards, with_index

# never compacts on these small corpora: every update after the build goes to the delta and the tombstones
SEGMENTED = {"component": "QdrantVectorIndex", "params": {"exact": True, "compact_fraction": 1000.0}}


def collections(folder: Path) -> set[str]:
    return {p.name for p in (folder / "qdrant" / "edge").iterdir() if p.is_dir()}


def reference(folder: Path) -> dict:
    """The dense node's saved reference (``index.json``) in the snapshot the manifest names."""
    manifest = json.loads((folder / "dashrag.json").read_text())
    found = list((folder / manifest["snapshot"]).rglob("index.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


# -- the pure parts ---------------------------------------------------------------------------------------------
def test_a_change_hides_the_bases_gone_points_and_takes_the_deltas_out():
    base = Segments(base_record={"count": 10})
    once = base.changed(gone_ids=[3, 9], added_ids=[10, 11], delta="d1")
    assert (once.delta, once.delta_ids, once.tombstones, once.live_count()) == ("d1", (10, 11), (3, 9), 10)
    # 11 leaves the delta; 9, hidden in the base, is given again to a new chunk, which lives in the delta
    twice = once.changed(gone_ids=[11, 4], added_ids=[9], delta="d2")
    assert (twice.delta_ids, twice.tombstones, twice.live_count()) == ((10, 9), (3, 4, 9), 9)
    assert twice.changed(gone_ids=[10, 9], added_ids=[], delta="d3").delta is None  # an empty delta is none
    assert not once.passes(0.5) and once.passes(0.3)


def test_two_segments_answers_merge_by_score_the_older_first_on_a_tie():
    assert merge_hits([(1, 0.9), (2, 0.5)], [(7, 0.7), (8, 0.5)], 3) == [(1, 0.9), (7, 0.7), (2, 0.5)]


@pytest.mark.parametrize("metric, distance", [("cosine", "Cosine"), ("dot", "Dot"), ("euclidean", "Euclid"),
                                              ("manhattan", "Manhattan")])
def test_the_delta_searched_in_process_scores_as_edge_does(tmp_path, metric, distance):
    """The delta is searched in this process (``DeltaVectors``) and merged with the base's Edge hits by score, so
    its scores must be Edge's own for the same points (its vectors as Edge stored them: cosine's normalised), for
    every metric, with and without a restriction, k above the delta's size included."""
    rng = np.random.default_rng(7)
    vectors, queries = rng.normal(size=(40, 8)).astype(np.float32), rng.normal(size=(5, 8)).astype(np.float32)
    ids = list(range(100, 140))
    store = EdgeStore(tmp_path)
    try:
        store.create("delta", Layout(dense=DenseLayout(size=8, distance=distance, hnsw_m=16, hnsw_ef_construct=100,
                                                       threshold_kb=10_000, quantization="none", graph=False)))
        store.upsert_dense("delta", ids, vectors, [{} for _ in ids])
        stored = store.vectors("delta", ids)
        held = DeltaVectors.of(Segments(base_record={"count": 0}, delta="delta", delta_ids=tuple(ids)),
                               np.asarray([stored[i] for i in ids]))
        sign = -1.0 if metric in ("euclidean", "manhattan") else 1.0
        for k, allowed in ((10, None), (50, None), (10, np.arange(40) % 3 == 0)):
            where = None if allowed is None else EngineFilter(chunk_ids=[ids[r] for r in np.flatnonzero(allowed)])
            edge = store.search_dense("delta", queries, k, where, SearchOptions(exact=True))
            mine = held.search(queries, k, metric, allowed)
            for theirs, ours in zip(edge, mine):
                assert [i for i, _ in ours] == [i for i, _ in theirs]
                assert np.allclose([s for _, s in ours], [sign * s for _, s in theirs], atol=1e-5)
    finally:
        store.close()


# -- updates through the delta: the property, the base untouched, the old tree's reader ---------------------------
@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_through_the_delta_answer_as_rebuilds(abstracts, tmp_path, start_embeddings, sequence):
    check_property(with_index(DENSE, SEGMENTED), abstracts, tmp_path, sequence, start_cache=start_embeddings)


@pytest.mark.slow
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_through_the_delta_sharded_answer_as_rebuilds(abstracts, tmp_path, start_embeddings,
                                                                      sequence):
    check_property(two_shards(DENSE, SEGMENTED), abstracts, tmp_path, sequence, start_cache=start_embeddings)


@pytest.mark.slow
def test_an_update_writes_a_delta_and_leaves_the_base_untouched_while_the_old_tree_answers(abstracts, tmp_path,
                                                                                         start_embeddings):
    """The base collection's files are the same bytes after an update (never opened at all); each update
    names a new delta and the tombstones; a tree loaded before an update answers as before while the update
    runs (here: applied and saved by another tree object of the same process, which shares the Edge store)."""
    config = with_index(DENSE, SEGMENTED)
    folder = saved_tree(config, abstracts[:12], tmp_path, cache_dir=start_embeddings)
    (base,) = collections(folder)
    old = dashrag.load(folder)
    try:
        before = answers(old, QUERIES)
        updating = dashrag.load(folder)
        try:
            updating.add_documents(Corpus((abstracts[20], changed(abstracts[3]))))  # abstract 3 replaced
            assert answers(old, QUERIES) == before  # the delta is written, nothing is published yet
            updating.save(folder)
        finally:
            updating.close()
        assert answers(old, QUERIES) == before  # published: the old tree object still searches what it loaded
    finally:
        old.close()
    first = reference(folder)["segments"]
    assert first["delta"] in collections(folder) and first["tombstones"]  # abstract 3's old chunks
    base_files = folder_digest(folder / "qdrant" / "edge" / base)  # (Edge rewrites some files when it opens a shard)
    dashrag.update(folder, add=[abstracts[21]], remove=[abstracts[20].id, abstracts[5].id])
    second = reference(folder)["segments"]
    assert collections(folder) == {base, second["delta"]} and second["delta"] != first["delta"]
    # abstract 20 lived in the delta: its points left it, none hidden; abstract 5 lived in the base: hidden
    left = set(first["delta_ids"]) - set(second["delta_ids"])
    assert left and not left & set(second["tombstones"]) and set(first["tombstones"]) < set(second["tombstones"])
    assert folder_digest(folder / "qdrant" / "edge" / base) == base_files
    resulting = [d for d in abstracts[:12] if d.id not in (abstracts[3].id, abstracts[5].id)]
    resulting += [changed(abstracts[3]), abstracts[21]]
    tree = dashrag.load(folder)
    try:
        got = answers(tree, QUERIES)
        filtered = tree.retrieve(QUERIES[1], filters={"TOPIC": "odd"}, top_k=50)[0]
    finally:
        tree.close()
    assert_same_answers(got, rebuilt_answers(config, resulting, tmp_path / "rebuilt", QUERIES))
    odd = {d.id for i, d in enumerate(abstracts) if i % 2}
    assert {hit.document_id for hit in filtered} == {d.id for d in resulting} & odd


@pytest.mark.slow
def test_a_new_filtered_field_in_the_delta_is_indexed_there_and_filters(abstracts, tmp_path, start_embeddings):
    folder = saved_tree(with_index(DENSE, SEGMENTED), abstracts[:12], tmp_path, cache_dir=start_embeddings)
    (base,) = collections(folder)
    dated = replace(abstracts[20], metadata={**abstracts[20].metadata, "year": 2020})
    dashrag.update(folder, add=[dated])
    delta = reference(folder)["segments"]["delta"]
    assert collections(folder) == {base, delta}
    tree = dashrag.load(folder)
    try:
        assert tree.index.store.payload_indexes(delta).get("filterable.fields.year") == "float"
        hits = tree.retrieve("cancer risk and mutations", filters={"year": {"$gte": 2019}})[0]
    finally:
        tree.close()
    assert {hit.document_id for hit in hits} == {dated.id}


@pytest.mark.slow
def test_past_the_fraction_an_update_compacts_into_one_collection(abstracts, tmp_path, start_embeddings):
    """With ``compact_fraction`` 0.1 over ~60 chunks, one added abstract stays in a delta; the next update passes
    the fraction and writes one collection (the base's files copied, tombstones deleted, the delta's points in)."""
    config = with_index(DENSE, {"component": "QdrantVectorIndex", "params": {"exact": True, "compact_fraction": 0.1}})
    folder = saved_tree(config, abstracts[:12], tmp_path, cache_dir=start_embeddings)
    dashrag.update(folder, add=[abstracts[20]])
    assert len(collections(folder)) == 2 and "segments" in reference(folder)
    dashrag.update(folder, add=abstracts[21:26], remove=[abstracts[2].id])
    assert len(collections(folder)) == 1 and "segments" not in reference(folder)
    resulting = [d for d in abstracts[:12] if d.id != abstracts[2].id] + [abstracts[20], *abstracts[21:26]]
    tree = dashrag.load(folder)
    try:
        got = answers(tree, QUERIES)
    finally:
        tree.close()
    assert_same_answers(got, rebuilt_answers(config, resulting, tmp_path / "rebuilt", QUERIES))


# -- kill -9 during dashrag add -------------------------------------------------------------------------------
def _dashrag(*args: object) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "dashrag.cli.main", *map(str, args)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_while_the_delta_is_written(start, folder: Path) -> bool:
    """SIGKILL the command as soon as a collection is being written under its temporary name; whether it was."""
    edge = folder / "qdrant" / "edge"
    process = start()
    try:
        while process.poll() is None:
            if any(p.name.endswith(".partial") for p in edge.iterdir()):
                process.send_signal(signal.SIGKILL)
                process.wait()
                return True
            time.sleep(0.001)
        return False
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_sigkill_at_any_moment_of_a_dense_add_on_edge_leaves_the_old_or_the_new_tree(scifact_subset_file, tmp_path):
    lines = scifact_subset_file.read_text(encoding="utf-8").splitlines()
    (tmp_path / "base.jsonl").write_text("\n".join(lines[:40]) + "\n", encoding="utf-8")
    (tmp_path / "more.jsonl").write_text("\n".join(lines[40:44]) + "\n", encoding="utf-8")
    base = tmp_path / "base"
    # ONNX MiniLM, not torch's: each killed `dashrag add` is a process of its own, which then embeds the added
    # abstracts without importing torch and sentence-transformers (~1.5 s of CPU instead of ~8); what is killed is
    # the save of the Edge index's delta, the same whatever model made the vectors (docs/testing.md, "Ninth pass")
    config = json.dumps(with_index(dense_tree(top_k=8), SEGMENTED))
    assert invoke("index", config, "--corpus", tmp_path / "base.jsonl", "--out", base).exit_code == 0

    def state(folder: Path) -> list:
        return answers_of(folder, QUERIES[:3], 4)

    old = state(base)
    complete = tmp_path / "complete"
    shutil.copytree(base, complete)
    # only the killed commands need a process of their own; the complete add and the reruns run in this one
    assert invoke("add", complete, "--corpus", tmp_path / "more.jsonl").exit_code == 0
    new = state(complete)
    assert new != old and len(collections(complete)) == 2  # the base and the delta
    # the moments the Edge path adds to a save's (those are killed in by tests/cli/test_update_commands.py): the delta
    # under its temporary name; renamed in, the manifest not switched yet (the rerun takes it as is); after the switch
    moments = ["the delta being written", "writing the new snapshot", "after the switch"]
    for attempt, moment in enumerate(moments):
        victim = tmp_path / f"victim-{attempt}"
        shutil.copytree(base, victim)
        start = partial(_dashrag, "add", victim, "--corpus", tmp_path / "more.jsonl")
        if moment == "the delta being written":
            assert _kill_while_the_delta_is_written(start, victim), "the add ended before its delta was written"
            killed_in = moment
        else:
            killed_in = kill_in_phase(start, victim, moment, 0.0)  # (the seconds: for a kill before the first write)
        assert state(victim) in (old, new), f"killed {killed_in}: a mix of the old and the new tree"
        rerun = invoke("add", victim, "--corpus", tmp_path / "more.jsonl")
        assert rerun.exit_code == 0, f"killed {killed_in}: {rerun.output}"
        assert state(victim) == new
        assert len(collections(victim)) == 2, f"killed {killed_in}: {collections(victim)}"  # nothing left behind
