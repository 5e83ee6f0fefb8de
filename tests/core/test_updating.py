"""Living trees (docs/updating.md): an updated tree answers as a tree built from scratch on the resulting
documents, and a bad update changes nothing. One rule per test; the property at the end runs random
sequences of adds, replaces and removes against rebuilds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.core.persistence import read_manifest
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import SourceDocument
from dashrag.errors import ConfigError, CorpusError, PersistenceError
from dashrag.store import segments
from dashrag.store.store import Store
from tests.conftest import folder_digest

SCORE_TOLERANCE = 1e-5
QUERIES = ["cell proteins in the immune response", "cancer risk and mutations", "gene expression in mice",
           "treatment with vitamin", "blood pressure"]
CHUNKER = {"component": "RecursiveCharacterChunker", "params": {"chunk_size": 400, "chunk_overlap": 40}}


def bm25(variant: str, delta: float = 0.0) -> dict:
    return {"component": "BM25Retriever", "params": {"top_k": 8, "variant": variant, "delta": delta,
                                                     "vectorizer": {"component": "BagOfWordsConverter",
                                                                    "params": {"stop_words": "english",
                                                                               "stemmer": "english"}}}}


TFIDF = {"component": "TFIDFRetriever", "params": {"top_k": 8}}
# MiniLM reading the first 32 tokens of a chunk: what these tests check (an update embeds only what is new, an updated
# tree answers as a rebuild) does not depend on the model's reach, and a quarter of the tokens takes about a quarter
# of the time of the 128 the other dense tests read (docs/testing.md).
UPDATE_MINILM = {"component": "MiniLMEmbedding", "params": {"max_seq_length": 32}}
DENSE = {"component": "DenseEmbeddingRetriever", "params": {"top_k": 8, "embedding": UPDATE_MINILM}}
HYBRID = {"component": "ParallelRetriever", "params": {"merge_strategy": "rrf", "children": [bm25("lucene"), DENSE]}}
BOOLEAN = {"component": "BooleanQueryRetriever", "params": {"children": [bm25("okapi")]}}
BOOLEAN_QUERIES = ["'cell' AND TOPIC=even", "'protein' OR 'cancer'", "NOT TOPIC=odd AND 'gene'"]
PRUNING_BM25 = {"component": "BM25Retriever", "params": {"top_k": 8, "vectorizer": {
    "component": "BagOfWordsConverter", "params": {"min_df": 2, "max_df": 0.5}}}}  # the vocabulary depends on df
KEYWORD_TREES = {"okapi": bm25("okapi"), "bm25l": bm25("bm25l", 0.5), "bm25plus": bm25("bm25plus", 1.0),
                 "lucene": bm25("lucene"), "tfidf": TFIDF, "boolean": BOOLEAN, "pruning": PRUNING_BM25,
                 "tfidf_bigrams": {"component": "TFIDFRetriever", "params": {"top_k": 8, "vectorizer": {
                     "component": "BagOfWordsConverter", "params": {"ngram_max": 2}}}}}


def answers(tree, queries: Sequence[str]) -> list[list[tuple[str, int, float]]]:
    return [[(c.document_id, c.chunk.position, c.score) for c in tree.retrieve(q)[0]] for q in queries]


def assert_same_answers(got, expected) -> None:
    """Same ranking, scores within 1e-5; two chunks may trade places only where they tie (within 1e-5)."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert len(g) == len(e), (g, e)
        for (gd, gp, gs), (ed, ep, es) in zip(g, e):
            assert abs(gs - es) <= SCORE_TOLERANCE * max(1.0, abs(es)), (g, e)
            if (gd, gp) != (ed, ep):  # a tie broken the other way: the other chunk must score the same here
                swapped = {(d, p): s for d, p, s in e}
                # absent from the expected top-k: the tie was broken across its cut, so it ties the last one
                other = swapped.get((gd, gp), e[-1][2])
                assert abs(other - gs) <= SCORE_TOLERANCE * max(1.0, abs(gs)), (g, e)


def saved_tree(config: dict, documents: Sequence[SourceDocument], folder: Path, cache_dir: Path | None = None) -> Path:
    """Built in the folder it is saved in (an embedded Qdrant lives beside the tree); its vectors are cached in
    ``cache_dir`` (default: beside the folder)."""
    tree = dashrag.build(config, Corpus(tuple(documents)), folder / "tree", chunker=CHUNKER,
                         cache_dir=cache_dir or folder.parent / "cache")
    tree.save(folder / "tree")
    tree.close()
    return folder / "tree"


def rebuilt_answers(config: dict, documents: Sequence[SourceDocument], folder: Path, queries) -> list:
    tree = dashrag.build(config, Corpus(tuple(documents)), folder, chunker=CHUNKER, cache_dir=folder.parent / "cache")
    try:
        return answers(tree, queries)
    finally:
        tree.close()


def changed(doc: SourceDocument) -> SourceDocument:
    return replace(doc, text=doc.text + " An added sentence about protein folding in cancer cells.")


# -- the rules, one per test -------------------------------------------------------------------------
def test_update_answers_as_a_rebuild_on_the_resulting_documents(abstracts, tmp_path):
    folder = saved_tree(bm25("okapi"), abstracts[:30], tmp_path)
    report = dashrag.update(
        folder, add=[*abstracts[30:35], changed(abstracts[3]), abstracts[4]], remove=[abstracts[7].id]
    )
    assert report.counts() == {"added": 5, "replaced": 1, "skipped": 1, "removed": 1}
    resulting = [d for d in abstracts[:30] if d.id not in (abstracts[3].id, abstracts[7].id)] + [
        *abstracts[30:35],
        changed(abstracts[3]),
    ]
    tree = dashrag.load(folder)
    assert_same_answers(answers(tree, QUERIES), rebuilt_answers(bm25("okapi"), resulting, tmp_path / "re", QUERIES))
    tree.close()


def test_a_purging_update_keeps_one_store_of_one_row_per_document_and_no_text_of_a_removed_one(abstracts, tmp_path):
    folder = saved_tree(TFIDF, abstracts[:10], tmp_path)
    secret = abstracts[2].text
    dashrag.update(folder, add=[changed(abstracts[5])], remove=[abstracts[2].id], purge=True)
    stores = sorted(folder.glob("store-*.sqlite"))
    assert [p.name for p in stores] == [read_manifest(folder)["store"]]
    documents, chunk_texts = _stored_documents_and_texts(stores[0])
    assert sorted(d.id for d in documents) == sorted(d.id for d in abstracts[:10] if d.id != abstracts[2].id)
    assert [d.text for d in documents if d.id == abstracts[5].id] == [changed(abstracts[5]).text]
    sentence = secret[:60]
    assert not any(sentence in p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file())
    assert not any(sentence in t for t in chunk_texts)


def test_an_update_hides_a_removed_document_from_every_reader_and_its_text_stays_in_the_base_alone(abstracts,
                                                                                                    tmp_path):
    folder = saved_tree(TFIDF, abstracts[:10], tmp_path)
    secret = abstracts[2].text[:60]
    dashrag.update(folder, add=[changed(abstracts[5])], remove=[abstracts[2].id])
    named = folder / read_manifest(folder)["store"]
    base = segments.base_of(named)
    assert base is not None and sorted(folder.glob("store-*.sqlite")) == sorted([named, base])
    documents, chunk_texts = _stored_documents_and_texts(named)
    assert sorted(d.id for d in documents) == sorted(d.id for d in abstracts[:10] if d.id != abstracts[2].id)
    assert [d.text for d in documents if d.id == abstracts[5].id] == [changed(abstracts[5]).text]
    assert not any(secret in t for t in chunk_texts)
    holding = [p for p in folder.rglob("*") if p.is_file() and secret in p.read_bytes().decode("utf-8", "replace")]
    assert holding == [base]


def _stored_documents_and_texts(path):
    store = Store(f"sqlite:///{path}", read_only=True)
    try:
        return store.read_documents(), store.read_chunk_set().texts
    finally:
        store.close()


def test_identical_document_is_skipped_and_nothing_is_written(abstracts, tmp_path):
    folder = saved_tree(TFIDF, abstracts[:10], tmp_path)
    before = folder_digest(folder)
    report = dashrag.update(folder, add=abstracts[:4])
    assert report.counts() == {"added": 0, "replaced": 0, "skipped": 4, "removed": 0}
    assert folder_digest(folder) == before


@pytest.mark.parametrize(
    "request_", ["unknown id", "no id", "twice", "added and removed", "other chunker", "everything removed"]
)
def test_bad_update_is_one_clear_error_and_changes_nothing(abstracts, tmp_path, request_):
    folder = saved_tree(TFIDF, abstracts[:6], tmp_path)
    before = folder_digest(folder)
    calls = {
        "unknown id": (dict(remove=["no-such-document"]), ConfigError, "unknown document id"),
        "no id": (dict(add=[replace(abstracts[7], id="")]), ConfigError, "has no id"),
        "twice": (dict(add=[abstracts[7], abstracts[7]]), ConfigError, "added twice"),
        "added and removed": (
            dict(add=[changed(abstracts[1])], remove=[abstracts[1].id]),
            ConfigError,
            "both added and removed",
        ),
        "other chunker": (
            dict(add=[abstracts[7]], chunker={"component": "WholeDocumentChunker", "params": {}}),
            ConfigError,
            "is not the tree's",
        ),
        "everything removed": (dict(remove=[d.id for d in abstracts[:6]]), CorpusError, "no chunks"),
    }
    kwargs, error, message = calls[request_]
    with pytest.raises(error, match=message):
        dashrag.update(folder, **kwargs)
    assert folder_digest(folder) == before


def test_updating_a_folder_that_holds_no_saved_tree_is_an_error_that_creates_nothing(abstracts, tmp_path):
    with pytest.raises(PersistenceError, match="no such saved retriever folder"):
        dashrag.update(tmp_path / "absent", add=abstracts[:1])
    assert not (tmp_path / "absent").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(PersistenceError, match="not a saved retriever"):
        dashrag.update(tmp_path / "empty", add=abstracts[:1])
    assert list((tmp_path / "empty").iterdir()) == []


def test_chunker_is_recorded_at_build_time_and_new_documents_are_cut_with_it(abstracts, tmp_path):
    folder = saved_tree(TFIDF, abstracts[:5], tmp_path)
    assert read_manifest(folder)["chunker"]["params"]["chunk_size"] == CHUNKER["params"]["chunk_size"]
    dashrag.update(folder, add=[abstracts[20]])
    tree = dashrag.load(folder)
    new = [c for c in tree.require_infra().chunks.chunks if c.document_id == abstracts[20].id]
    tree.close()
    assert len(new) > 1 and max(len(c.text) for c in new) <= CHUNKER["params"]["chunk_size"]


def test_positions_stay_contiguous_so_neighbour_windows_match_a_rebuild(abstracts, tmp_path):
    folder = saved_tree(TFIDF, abstracts[:12], tmp_path)
    dashrag.update(folder, add=[changed(abstracts[0]), abstracts[40]], remove=[abstracts[1].id])
    resulting = [d for d in abstracts[:12] if d.id not in (abstracts[0].id, abstracts[1].id)] + [
        changed(abstracts[0]),
        abstracts[40],
    ]
    tree = dashrag.load(folder)
    rebuilt = dashrag.build(TFIDF, Corpus(tuple(resulting)), tmp_path / "re", chunker=CHUNKER)
    for query in QUERIES:
        got = [(c.document_id, c.chunk.text) for c in tree.expand_retrieved_chunks(tree.retrieve(query)[0], 3)]
        want = [(c.document_id, c.chunk.text) for c in rebuilt.expand_retrieved_chunks(rebuilt.retrieve(query)[0], 3)]
        assert got == want
    tree.close()
    rebuilt.close()


def test_in_memory_add_and_remove_then_save(abstracts, tmp_path):
    tree = dashrag.build(TFIDF, Corpus(tuple(abstracts[:8])), tmp_path / "work", chunker=CHUNKER)
    assert tree.add_documents(abstracts[8:10]).counts()["added"] == 2
    assert tree.remove_documents([abstracts[0].id]).counts()["removed"] == 1
    tree.save(tmp_path / "saved")
    expected = answers(tree, QUERIES)
    tree.close()
    loaded = dashrag.load(tmp_path / "saved")
    assert_same_answers(answers(loaded, QUERIES), expected)
    assert_same_answers(expected, rebuilt_answers(TFIDF, [*abstracts[1:10]], tmp_path / "re", QUERIES))
    loaded.close()


@pytest.mark.slow
def test_dense_update_embeds_only_new_chunks(abstracts, tmp_path, monkeypatch):
    folder = saved_tree(DENSE, abstracts[:10], tmp_path)
    from dashrag.embeddings.base import EmbeddingModel

    embedded: list[str] = []
    original = EmbeddingModel.embed_documents

    def counting(self, texts):
        embedded.extend(texts)
        return original(self, texts)

    monkeypatch.setattr(EmbeddingModel, "embed_documents", counting)
    dashrag.update(folder, remove=[abstracts[0].id])
    assert embedded == []  # removing embeds nothing
    dashrag.update(folder, add=[abstracts[11]])
    tree = dashrag.load(folder)
    new_texts = [c.text for c in tree.require_infra().chunks.chunks if c.document_id == abstracts[11].id]
    tree.close()
    assert embedded == new_texts


@pytest.mark.parametrize("config", [bm25("lucene"), TFIDF], ids=["bm25", "tfidf"])
def test_keyword_update_analyses_only_the_new_chunks(abstracts, tmp_path, monkeypatch, config):
    folder = saved_tree(config, abstracts[:10], tmp_path)
    from dashrag.vectorizers.bag_of_words import BagOfWordsConverter

    def refit(self, texts):
        raise AssertionError("an update refit the vectorizer")

    analysed: list[str] = []
    original = BagOfWordsConverter._text_analyzer

    def recording(self):
        analyze = original(self)
        return lambda text: (analysed.append(text), analyze(text))[1]

    monkeypatch.setattr(BagOfWordsConverter, "fit_transform", refit)
    monkeypatch.setattr(BagOfWordsConverter, "_text_analyzer", recording)
    dashrag.update(folder, add=[abstracts[12]], remove=[abstracts[0].id])
    tree = dashrag.load(folder)
    new_texts = [c.text for c in tree.require_infra().chunks.chunks if c.document_id == abstracts[12].id]
    tree.close()
    assert analysed == new_texts


def test_keyword_update_of_a_tree_without_saved_counts_counts_the_old_chunks_again(abstracts, tmp_path):
    tree = dashrag.build(bm25("okapi"), Corpus(tuple(abstracts[:10])), tmp_path / "work", chunker=CHUNKER)
    tree.nested["vectorizer"]._counts = None  # as a tree loaded from a folder saved before counts were kept
    tree.add_documents([abstracts[20]])
    expected = rebuilt_answers(bm25("okapi"), [*abstracts[:10], abstracts[20]], tmp_path / "re", QUERIES)
    assert_same_answers(answers(tree, QUERIES), expected)
    tree.close()


# -- the property: random sequences against rebuilds ------------------------------------------------
Step = tuple[str, int]  # ("add" | "change" | "remove", abstracts index)
steps = st.lists(st.tuples(st.sampled_from(["add", "change", "remove"]), st.integers(0, 29)), min_size=1, max_size=4)


def expected_after(documents: dict[str, SourceDocument], step: Step, abstracts) -> tuple[list, list[str]]:
    """What one step asks for, and the resulting documents (kept in order, then added or replaced)."""
    kind, i = step
    doc = abstracts[i]
    if kind == "remove":
        if doc.id not in documents or len(documents) == 1:
            return [], []
        documents.pop(doc.id)
        return [], [doc.id]
    new = changed(documents[doc.id]) if kind == "change" and doc.id in documents else doc
    if doc.id in documents and new != documents[doc.id]:
        documents.pop(doc.id)
    documents.setdefault(doc.id, new)
    return [new], []


def check_property(config: dict, abstracts, tmp_path: Path, sequence: list[Step], queries=QUERIES,
                   start_cache: Path | None = None) -> None:
    """``sequence`` applied to a saved tree of the first 12 abstracts answers as a rebuild on the resulting documents.
    ``start_cache``: an embedding cache for that first tree, the same in every example (a session's
    ``start_embeddings``); the rebuild embeds into a cache of its own, so the two trees' vectors never come from
    one file."""
    run = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
    start = abstracts[:12]
    folder = saved_tree(config, start, run, cache_dir=start_cache)
    documents = {d.id: d for d in start}
    for step in sequence:
        add, remove = expected_after(documents, step, abstracts[12:] if step[0] == "add" else abstracts)
        if add or remove:
            dashrag.update(folder, add=add, remove=remove)
    tree = dashrag.load(folder)
    try:
        got = answers(tree, queries)
    finally:
        tree.close()
    assert_same_answers(got, rebuilt_answers(config, list(documents.values()), run / "rebuilt", queries))
    store = Store(f"sqlite:///{folder / read_manifest(folder)['store']}", read_only=True)
    try:  # the store, changed in place update after update, holds the resulting documents in their order
        assert [(d.id, d.text) for d in store.read_documents()] == [(d.id, d.text) for d in documents.values()]
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KEYWORD_TREES))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_answer_as_rebuilds_keyword_and_boolean(abstracts, tmp_path, name, sequence):
    queries = BOOLEAN_QUERIES if name == "boolean" else QUERIES
    check_property(KEYWORD_TREES[name], abstracts, tmp_path, sequence, queries)


def keep_tombstones(monkeypatch) -> None:
    """Removed rows kept as tombstones until they and the counts' delta pass half of the base: at the default (1/64)
    every removal from a tree of a dozen abstracts is past it, so the counts would be made again each time."""
    from dashrag.scoring import count_segments

    monkeypatch.setattr(count_segments, "COMPACT_FRACTION", 0.5)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KEYWORD_TREES))
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_by_tombstone_answer_as_rebuilds_keyword_and_boolean(abstracts, tmp_path, monkeypatch, name,
                                                                           sequence):
    """With removals by tombstone: BM25's and TF-IDF's statistics and TF-IDF's query norm read the live rows only,
    and a term whose last chunk left is out of every query's analysis (docs/scale.md, "Removals by tombstone")."""
    keep_tombstones(monkeypatch)
    queries = BOOLEAN_QUERIES if name == "boolean" else QUERIES
    check_property(KEYWORD_TREES[name], abstracts, tmp_path, sequence, queries)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dense", "hybrid"])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_random_updates_answer_as_rebuilds_dense_and_hybrid(abstracts, tmp_path, start_embeddings, name, sequence):
    check_property({"dense": DENSE, "hybrid": HYBRID}[name], abstracts, tmp_path, sequence,
                   start_cache=start_embeddings)


def test_manifest_records_the_chunker_as_json(abstracts, tmp_path):
    folder = saved_tree(TFIDF, abstracts[:3], tmp_path)
    assert json.loads((folder / "dashrag.json").read_text())["chunker"]["component"] == CHUNKER["component"]
