"""The restriction gives the same answers in-process, on Qdrant and on PostgreSQL (a property over random
category filters, document lists and opaque predicates): each engine filters inside its search, before top-k."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.core.restriction import Restriction
from dashrag.documents.corpus import Corpus
from tests.boolean.corpus_fixture import load_documents
from tests.indexes.conftest import dense_tree

QUERIES = ["asylum appeal hearing", "cleaning the kitchen floor", "family reunification in Iraq", "bread"]
DOCUMENTS = load_documents()
VALUES: dict[str, set[str]] = {}
for document in DOCUMENTS:
    for name, values in document.metadata.items():
        VALUES.setdefault(name, set()).update(values)
NAMES = sorted(VALUES)


@pytest.fixture(scope="module")
def trees(engine_cache, pg_url, tmp_path_factory):
    corpus = Corpus(tuple(DOCUMENTS))
    folder = tmp_path_factory.mktemp("restriction-trees")
    indexes = {"in-process": None,
               "qdrant": {"component": "QdrantVectorIndex", "params": {"exact": True}},
               "postgresql": {"component": "PgVectorIndex", "params": {"url": pg_url, "exact": True}}}
    built = {name: dashrag.build(dense_tree(index, top_k=5), corpus, folder / name, cache_dir=engine_cache)
             for name, index in indexes.items()}
    yield built
    for tree in built.values():
        tree.close()


category_filters = st.lists(st.sampled_from(NAMES), min_size=1, max_size=2, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({name: st.lists(st.sampled_from(sorted(VALUES[name])), min_size=1,
                                                          unique=True) for name in names}))
document_lists = st.lists(st.sampled_from([d.id for d in DOCUMENTS]), min_size=1, max_size=5, unique=True)


def answers(trees, query: str, restriction: Restriction) -> dict[str, list[int]]:
    return {name: [c.id for c in tree.retrieve(query, restriction=restriction)[0]] for name, tree in trees.items()}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wanted=category_filters, query=st.sampled_from(QUERIES))
def test_category_filters_agree_across_engines(trees, wanted, query):
    found = answers(trees, query, Restriction.where_categories(**wanted))
    assert found["qdrant"] == found["in-process"] and found["postgresql"] == found["in-process"]
    allowed = {d.id for d in DOCUMENTS if all(set(v) & set(d.metadata.get(k, ())) for k, v in wanted.items())}
    chunks = trees["in-process"].require_infra().chunks
    assert {chunks.by_id(i).document_id for i in found["in-process"]} <= allowed


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents=document_lists, query=st.sampled_from(QUERIES))
def test_document_lists_agree_across_engines(trees, documents, query):
    found = answers(trees, query, Restriction.to_documents(documents))
    assert found["qdrant"] == found["in-process"] and found["postgresql"] == found["in-process"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.sampled_from(sorted(VALUES["CAT1"])), query=st.sampled_from(QUERIES))
def test_opaque_predicates_agree_across_engines(trees, value, query):
    restriction = Restriction(predicate=lambda categories: value not in categories.get("CAT1", ()))
    found = answers(trees, query, restriction)
    assert found["qdrant"] == found["in-process"] and found["postgresql"] == found["in-process"]


def test_a_restricted_search_still_returns_k_where_k_exist(trees):
    restriction = Restriction.where_categories(COUNTRY_OF_ORIGIN=["IQ"])
    found = answers(trees, "bread recipe", restriction)  # the allowed chunks rank low for this query
    chunks = trees["in-process"].require_infra().chunks
    allowed = int(restriction.row_mask(chunks).sum())
    assert all(len(ids) == min(5, allowed) for ids in found.values())
