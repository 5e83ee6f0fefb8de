"""Segments of the in-process keyword index (docs/scale.md, "Segments of the keyword index"): an add writes the
postings and counts of its chunks alone and leaves the base's files where they were (same inodes, same bytes, named
by every manifest); past ``compact_fraction``, and on a removal, the postings are made again as a new base, and the
old base leaves the folder under the grace rule; every state answers as a rebuild (a hypothesis property over
sequences that cross compactions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.core.persistence import read_manifest
from dashrag.documents.corpus import Corpus
from dashrag.errors import PersistenceError
from dashrag.scoring.bm25_segments import SegmentedWeights
from tests.core.test_updating import (
    CHUNKER,
    QUERIES,
    answers,
    assert_same_answers,
    check_property,
    rebuilt_answers,
)


def keyword(compact_fraction: float) -> dict:
    return {"component": "BM25Retriever", "params": {
        "top_k": 8, "variant": "lucene",
        "vectorizer": {"component": "BagOfWordsConverter", "params": {"stop_words": "english", "stemmer": "english"}},
        "index": {"component": "InMemoryKeywordIndex", "params": {"compact_fraction": compact_fraction}}}}


def shared_digests(folder: Path) -> dict[str, str]:
    """label → digest of the shared folders the current snapshot's BM25 node references (postings, counts)."""
    snapshot = folder / read_manifest(folder)["snapshot"]
    return {path.name.split(".")[0]: json.loads(path.read_text())["digest"]
            for path in snapshot.glob("nodes/*/*.shared.json")}


def file_identities(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def saved(abstracts, tmp_path) -> Path:
    tree = dashrag.build(keyword(0.5), Corpus(tuple(abstracts[:20])), tmp_path / "tree", chunker=CHUNKER)
    tree.save(tmp_path / "tree")
    tree.close()
    return tmp_path / "tree"


def test_an_add_leaves_the_base_files_as_they_were_and_answers_as_a_rebuild(saved, abstracts, tmp_path, monkeypatch):
    from dashrag.scoring import count_segments

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.5)  # the counts' delta kept too (1/64 of 20 documents
    before = shared_digests(saved)                                 # is less than one)
    assert set(before) == {"postings", "counts"}
    base_files = {label: file_identities(saved / "models" / digest) for label, digest in before.items()}
    dashrag.update(saved, add=abstracts[20:22])
    assert shared_digests(saved) == before
    for label, digest in before.items():  # neither rewritten nor replaced
        assert file_identities(saved / "models" / digest) == base_files[label]
    snapshot = saved / read_manifest(saved)["snapshot"]
    [node] = [p.parent for p in snapshot.glob("nodes/*/weights.json")]
    assert (node / "delta_first.npy").is_file() and not (node / "first.npy").exists()
    meta = json.loads((node / "weights.json").read_text())
    assert meta["layout"] == "segments" and meta["base_rows"] < meta["n_docs"]
    tree = dashrag.load(saved, full_check=True)  # every byte checked against the manifest, the shared ones too
    try:
        got = answers(tree, QUERIES)
    finally:
        tree.close()
    assert_same_answers(got, rebuilt_answers(keyword(0.5), abstracts[:22], tmp_path / "re", QUERIES))


def test_past_the_fraction_a_new_base_and_the_old_one_leaves_after_the_grace(saved, abstracts):
    first = shared_digests(saved)["postings"]
    dashrag.update(saved, add=abstracts[20:35])  # 15 documents on 20: past half of the base's chunks
    second = shared_digests(saved)["postings"]
    assert second != first and (saved / "models" / first).is_dir()  # the previous manifest still names it
    dashrag.update(saved, remove=[abstracts[0].id])  # past the counts' fraction (1/64): the live rows close up
    third = shared_digests(saved)["postings"]
    assert third not in (first, second) and not (saved / "models" / first).exists()


def saved_node(folder: Path) -> Path:
    snapshot = folder / read_manifest(folder)["snapshot"]
    [node] = [p.parent for p in snapshot.glob("nodes/*/weights.json")]
    return node


def test_a_removal_under_the_fraction_tombstones_its_rows_and_answers_as_a_rebuild(saved, abstracts, tmp_path,
                                                                                   monkeypatch):
    from dashrag.scoring import count_segments

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.5)
    before = shared_digests(saved)
    base_files = {label: file_identities(saved / "models" / digest) for label, digest in before.items()}
    dashrag.update(saved, remove=[abstracts[3].id, abstracts[11].id])
    assert shared_digests(saved) == before  # neither base made again
    for label, digest in before.items():
        assert file_identities(saved / "models" / digest) == base_files[label]
    node = saved_node(saved)
    meta = json.loads((node / "weights.json").read_text())
    assert meta["tombstones"] > 0 and (node / "tombstone_rows.npy").is_file()
    tree = dashrag.load(saved, full_check=True)
    try:
        got = answers(tree, QUERIES)
    finally:
        tree.close()
    kept = [d for i, d in enumerate(abstracts[:20]) if i not in (3, 11)]
    assert_same_answers(got, rebuilt_answers(keyword(0.5), kept, tmp_path / "re", QUERIES))


def test_a_term_whose_last_chunk_is_removed_leaves_the_vocabulary(saved, abstracts, monkeypatch):
    """Its column stays (null in vocabulary.json) but a query's analysis no longer finds it, as in a rebuild."""
    from dashrag.scoring import count_segments

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.5)
    tree = dashrag.load(saved)
    try:
        terms = tree.nested["vectorizer"].single_word_steps().terms
        chunks = tree.require_infra().chunks
        by_document = [(c.document_id, set(terms(c.text))) for c in chunks.chunks_at(range(len(chunks)))]
        columns = list(tree.nested["vectorizer"].vocabulary)
    finally:
        tree.close()
    gone = abstracts[5].id
    own = set().union(*(t for d, t in by_document if d == gone))
    own -= set().union(*(t for d, t in by_document if d != gone))
    assert own  # the abstract has words of its own
    dashrag.update(saved, remove=[gone])
    [saved_terms] = [json.loads(p.read_text()) for p in saved_node(saved).parent.glob("*/vocabulary.json")]
    assert len(saved_terms) == len(columns) and {columns[i] for i, t in enumerate(saved_terms) if t is None} == own
    tree = dashrag.load(saved)
    try:  # the removed abstract's own terms are no longer found in its text
        found = {columns[i] for i in tree.nested["vectorizer"].term_counts(abstracts[5].text)[0]}
    finally:
        tree.close()
    assert found and not found & own


def test_a_missing_base_is_a_clear_error(saved):
    shutil_target = saved / "models" / shared_digests(saved)["postings"]
    for path in shutil_target.iterdir():
        path.unlink()
    with pytest.raises(PersistenceError, match="missing"):
        dashrag.load(saved)


steps = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "change", "remove"]), st.integers(0, 29)),
                 min_size=2, max_size=6)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_across_compactions_answer_as_rebuilds(abstracts, tmp_path, monkeypatch, sequence):
    """A base of 12 abstracts' chunks compacted when the delta passes a tenth of it (the counts at a fifth): most
    sequences of adds cross one or more compactions, of the postings and of the counts apart."""
    from dashrag.scoring import count_segments

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.2)
    check_property(keyword(0.1), abstracts, tmp_path, sequence)


removal_steps = st.lists(st.tuples(st.sampled_from(["add", "change", "remove", "remove"]), st.integers(0, 29)),
                         min_size=2, max_size=6)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=removal_steps, variant=st.sampled_from(["okapi", "bm25plus", "bm25l"]))
def test_random_removals_by_tombstone_across_compactions_answer_as_rebuilds(abstracts, tmp_path, monkeypatch,
                                                                           sequence, variant):
    """Tombstones kept until the delta and they pass 0.4 of the counts' base (then a rewrite: the live rows close
    up), the postings made again past 0.6 of theirs (keeping the counts' tombstones): most sequences remove under
    the fraction, several cross a rewrite."""
    from dashrag.scoring import count_segments

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.4)
    config = keyword(0.6)
    config["params"].update(variant=variant, delta=0.5 if variant != "okapi" else 0.0)
    check_property(config, abstracts, tmp_path, sequence)


EVEN = {"TOPIC": "even"}


def filtered(tree) -> list:
    """Each query's answers (document, position, score) under the selective filter the two filtered tests share."""
    return [[(c.document_id, c.chunk.position, c.score) for c in tree.retrieve(q, filters=EVEN)[0]] for q in QUERIES]


def test_a_filtered_query_after_an_add_answers_as_a_rebuild(abstracts, tmp_path):
    """A selective filter's own postings are cut from both segments (``SegmentedWeights.restricted``)."""
    documents = abstracts[1:24]  # 11 of 23 "even": under half the chunks, so the filter gets postings of its own
    tree = dashrag.build(keyword(0.5), Corpus(tuple(documents[:20])), tmp_path / "tree", chunker=CHUNKER)
    tree.save(tmp_path / "tree")
    tree.close()
    dashrag.update(tmp_path / "tree", add=documents[20:])

    tree = dashrag.load(tmp_path / "tree")
    rebuilt = dashrag.build(keyword(0.5), Corpus(tuple(documents)), tmp_path / "re", chunker=CHUNKER)
    try:
        got, expected = filtered(tree), filtered(rebuilt)
        assert isinstance(tree.index.weights, SegmentedWeights)  # a base and a delta
        assert any(cut is not None for _, cut in tree.index._cut_down.values())  # the filter's own postings
    finally:
        tree.close()
        rebuilt.close()
    even = {d.id for d in documents if d.metadata["TOPIC"] == ("even",)}
    assert any(got) and all(d in even for row in got for d, _, _ in row)
    assert_same_answers(got, expected)


def test_a_filtered_query_after_a_removal_by_tombstone_answers_as_a_rebuild(abstracts, tmp_path, monkeypatch):
    """A selective filter's own postings are cut from the live rows' stored postings (``TombstonedWeights``)."""
    from dashrag.scoring import count_segments
    from dashrag.scoring.bm25_tombstones import TombstonedWeights

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.5)
    documents = abstracts[1:24]
    tree = dashrag.build(keyword(0.5), Corpus(tuple(documents)), tmp_path / "tree", chunker=CHUNKER)
    tree.save(tmp_path / "tree")
    tree.close()
    dashrag.update(tmp_path / "tree", remove=[documents[2].id, documents[9].id])
    kept = [d for i, d in enumerate(documents) if i not in (2, 9)]

    tree = dashrag.load(tmp_path / "tree")
    rebuilt = dashrag.build(keyword(0.5), Corpus(tuple(kept)), tmp_path / "re", chunker=CHUNKER)
    try:
        got, expected = filtered(tree), filtered(rebuilt)
        assert isinstance(tree.index.weights, TombstonedWeights)
        assert any(cut is not None for _, cut in tree.index._cut_down.values())  # the filter's own postings
    finally:
        tree.close()
        rebuilt.close()
    assert any(got)
    assert_same_answers(got, expected)


def test_whole_vector_distances_after_a_removal_by_tombstone_answer_as_a_rebuild(abstracts, tmp_path, monkeypatch):
    """DashAI's cosine reads every live chunk's whole vector of weights (``TombstonedWeights.eager``)."""
    from dashrag.scoring import count_segments

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.5)
    config = keyword(0.5)
    config["params"].update(variant="dashai", similarity_function="cosine")
    tree = dashrag.build(config, Corpus(tuple(abstracts[:20])), tmp_path / "tree", chunker=CHUNKER)
    tree.save(tmp_path / "tree")
    tree.close()
    dashrag.update(tmp_path / "tree", remove=[abstracts[4].id])
    tree = dashrag.load(tmp_path / "tree")
    try:
        got = answers(tree, QUERIES)
    finally:
        tree.close()
    kept = [d for i, d in enumerate(abstracts[:20]) if i != 4]
    assert_same_answers(got, rebuilt_answers(config, kept, tmp_path / "re", QUERIES))
