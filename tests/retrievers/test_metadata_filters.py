"""Metadata filters are pre-filters in every retriever (a property over random metadata and random filters):

* a leaf (BM25, TF-IDF, dense) returns exactly brute-force filter-then-rank: its whole unfiltered ranking,
  restricted to the documents a naive evaluator of the filter accepts, cut at k, with the same scores;
* composites, rerankers and the boolean query: test_filtered_composites.py (their own combination of these
  answers: filter_reference.py).

The naive evaluator here is written from the language's rules (docs/filters.md), not from dashrag/filters.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.documents.corpus import Corpus
from dashrag.errors import FilterError, QueryError
from dashrag.fusion.strategies import STRATEGY_NAMES
from tests.boolean.corpus_fixture import load_documents

FAST_ONNX = {"component": "MiniLMOnnxEmbedding", "params": {"max_seq_length": 128}}
QUERIES = ["asylum appeal hearing", "cleaning the kitchen floor", "family reunification", "bread recipe"]
TAGS = ["red", "green", "blue", "amber"]
LANGS = ["es", "de", "en"]


def synthetic(seed: int) -> dict:
    """Numbers, dates, booleans, strings and lists, each field missing from some documents."""
    rng = random.Random(seed)
    fields = {"year": rng.randint(2000, 2024), "score": round(rng.uniform(0, 1), 3),
              "published": f"20{rng.randint(10, 24)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
              "open": rng.random() < 0.5, "lang": rng.choice(LANGS),
              "tags": rng.sample(TAGS, rng.randint(0, 3))}
    return {k: v for k, v in fields.items() if rng.random() < 0.85}


DOCUMENTS = [replace(d, metadata={**d.metadata, **synthetic(i)}) for i, d in enumerate(load_documents())]
VALUES = {"year": st.integers(1999, 2025), "score": st.floats(0, 1).map(lambda x: round(x, 2)),
          "published": st.dates().map(lambda d: d.isoformat()), "open": st.booleans(),
          "lang": st.sampled_from(LANGS + ["fr"]), "tags": st.sampled_from(TAGS)}
ORDERED = ("year", "score", "published", "lang")


def field_filters(name: str):
    value = VALUES[name]
    ops = ["$eq", "$ne"] + (["$gt", "$gte", "$lt", "$lte"] if name in ORDERED else [])
    return st.one_of(
        value.map(lambda v: {name: v}),
        st.tuples(st.sampled_from(ops), value).map(lambda p: {name: {p[0]: p[1]}}),
        st.tuples(st.sampled_from(["$in", "$nin"]), st.lists(value, max_size=3)).map(lambda p: {name: {p[0]: p[1]}}),
        st.booleans().map(lambda b: {name: {"$exists": b}}),
    )


leaf_filters = st.sampled_from(sorted(VALUES)).flatmap(field_filters)
filters = st.recursive(leaf_filters, lambda inner: st.one_of(
    st.lists(inner, min_size=1, max_size=3).map(lambda parts: {"$and": parts}),
    st.lists(inner, min_size=1, max_size=3).map(lambda parts: {"$or": parts}),
    inner.map(lambda part: {"$not": part})), max_leaves=4)


# -- the naive evaluator ---------------------------------------------------------------------
def _key(value):
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return ("string", value)
        return ("date", (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())
    if isinstance(value, bool):
        return ("bool", value)
    return ("number", float(value))


def _some(metadata, name, test) -> bool:
    raw = metadata.get(name)
    items = raw if isinstance(raw, list) else ([] if raw is None else [raw])
    return any(test(_key(item)) for item in items)


def _op(op, wanted):
    kind, key = _key(wanted)
    compare = {"$eq": lambda a: a == key, "$gt": lambda a: a > key, "$gte": lambda a: a >= key,
               "$lt": lambda a: a < key, "$lte": lambda a: a <= key}[op]
    return lambda item: item[0] == kind and compare(item[1])


def naive(raw: dict, metadata) -> bool:
    for name, condition in raw.items():
        if name == "$and" and not all(naive(p, metadata) for p in condition):
            return False
        if name == "$or" and not any(naive(p, metadata) for p in condition):
            return False
        if name == "$not" and naive(condition, metadata):
            return False
        if name.startswith("$"):
            continue
        ops = condition if isinstance(condition, dict) else {"$eq": condition}
        for op, operand in ops.items():
            if op == "$exists":
                held = _some(metadata, name, lambda item: True)
                ok = held == operand
            elif op in ("$in", "$nin"):
                ok = any(_some(metadata, name, _op("$eq", v)) for v in operand) == (op == "$in")
            elif op == "$ne":
                ok = not _some(metadata, name, _op("$eq", operand))
            else:
                ok = _some(metadata, name, _op(op, operand))
            if not ok:
                return False
    return True


def matching_documents(raw: dict) -> list[str]:
    return [d.id for d in DOCUMENTS if naive(raw, d.metadata)]


# -- the trees ------------------------------------------------------------------------------
def bm25(top_k=5):
    return {"component": "BM25Retriever", "params": {"top_k": top_k}}


def tfidf(top_k=5):
    return {"component": "TFIDFRetriever", "params": {"top_k": top_k}}


def dense(top_k=5):
    return {"component": "DenseEmbeddingRetriever", "params": {"top_k": top_k, "embedding": FAST_ONNX}}


LEAVES = {"bm25": bm25(), "tfidf": tfidf(), "dense": dense()}
COMPOSITES = {
    **{f"parallel-{s}": {"component": "ParallelRetriever", "params": {
        "children": [bm25(8), dense(8)], "merge_strategy": s, "top_k": 5}} for s in STRATEGY_NAMES},
    "sequential": {"component": "SequentialRetriever", "params": {"children": [tfidf(12), bm25(5)]}},
    "mmr": {"component": "MMRRerankerRetriever", "params": {"children": [bm25(10)], "top_k": 4,
                                                            "embedding": FAST_ONNX}},
}


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    folder = tmp_path_factory.mktemp("filter-trees")
    corpus = Corpus(tuple(DOCUMENTS))
    built = {name: dashrag.build(config, corpus, folder / name, cache_dir=folder / "cache")
             for name, config in {**LEAVES, **COMPOSITES}.items()}
    yield built
    for tree in built.values():
        tree.close()


def answer(chunks) -> list[tuple[int, float]]:
    return [(c.id, round(c.score, 6)) for c in chunks]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=filters, query=st.sampled_from(QUERIES))
def test_a_filtered_leaf_is_filter_then_rank(trees, raw, query):
    allowed = set(matching_documents(raw))
    for name in LEAVES:
        tree = trees[name]
        chunks = tree.require_infra().chunks
        everything, _ = tree.retrieve(query, top_k=len(chunks))
        expected = [c for c in everything if c.document_id in allowed][:5]
        found, _ = tree.retrieve(query, filters=raw)
        assert answer(found) == answer(expected), name


def test_a_selective_filter_still_returns_k(trees):
    """Documents of one language rank low for a query, yet k of them come back (a post-filter would return fewer;
    dense: every chunk scores, so k matching chunks exist)."""
    tree = trees["dense"]
    chunks = tree.require_infra().chunks
    everything, _ = tree.retrieve("asylum appeal", top_k=len(chunks))
    wanted = {"lang": "es"}
    allowed = set(matching_documents(wanted))
    expected = [c.id for c in everything if c.document_id in allowed][:5]
    found = [c.id for c in tree.retrieve("asylum appeal", filters=wanted)[0]]
    assert found == expected and len(found) == 5
    assert len(set(found) & {c.id for c in everything[:5]}) < 5


def test_a_filter_that_misfits_the_corpus_names_the_path(trees):
    with pytest.raises(FilterError, match=r"\$\.\$or\[1\]\.year: compares a string"):
        trees["bm25"].retrieve("bread", filters={"$or": [{"lang": "es"}, {"year": "2015"}]})


@pytest.mark.parametrize("name", sorted({**LEAVES, **COMPOSITES}))
def test_the_typed_signature_refuses_unknown_keywords_and_bad_top_k(trees, name):
    tree = trees[name]
    with pytest.raises(TypeError):
        tree.retrieve("bread", topk=1)
    with pytest.raises(TypeError):
        tree.retrieve_batch(["bread"], restrictions=None)
    for bad in ("5", 2.7, True, -1, 0):
        with pytest.raises(QueryError, match="top_k must be a positive integer"):
            tree.retrieve("bread", top_k=bad)
        with pytest.raises(QueryError, match="top_k must be a positive integer"):
            tree.retrieve_batch(["bread"], top_k=bad)
