"""The restriction gives the same answers in-process, on Qdrant and on PostgreSQL, for dense and for BM25
nodes (a property over random category filters, document lists and opaque predicates): each engine filters
inside its search, before top-k."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashrag.core.restriction import Restriction
from tests.boolean.corpus_fixture import load_documents

QUERIES = ["asylum appeal hearing", "cleaning the kitchen floor", "family reunification in Iraq", "bread"]
ENGINES = ("qdrant", "postgresql")
PGVECTOR_EXACT = True  # engines compared with each other: pgvector exact (tests/indexes/conftest.py)
DOCUMENTS = load_documents()
ENGINE_CORPUS = DOCUMENTS  # the corpus of conftest.engine_trees
VALUES: dict[str, set[str]] = {}
for document in DOCUMENTS:
    for name, values in document.metadata.items():
        VALUES.setdefault(name, set()).update(values)
NAMES = sorted(VALUES)


def agree(found: dict[str, list[int]]) -> bool:
    return all(found[engine] == found["in-process"] for engine in ENGINES)


category_filters = st.lists(st.sampled_from(NAMES), min_size=1, max_size=2, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({name: st.lists(st.sampled_from(sorted(VALUES[name])), min_size=1,
                                                          unique=True) for name in names}))
document_lists = st.lists(st.sampled_from([d.id for d in DOCUMENTS]), min_size=1, max_size=5, unique=True)


def answers(trees, query: str, restriction: Restriction) -> dict[str, list[int]]:
    return {name: [c.id for c in tree.retrieve(query, restriction=restriction)[0]] for name, tree in trees.items()}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wanted=category_filters, query=st.sampled_from(QUERIES))
def test_category_filters_agree_across_engines(engine_trees, wanted, query):
    found = answers(engine_trees, query, Restriction.where_categories(**wanted))
    assert agree(found)
    allowed = {d.id for d in DOCUMENTS if all(set(v) & set(d.metadata.get(k, ())) for k, v in wanted.items())}
    chunks = engine_trees["in-process"].require_infra().chunks
    assert {chunks.by_id(i).document_id for i in found["in-process"]} <= allowed


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents=document_lists, query=st.sampled_from(QUERIES))
def test_document_lists_agree_across_engines(engine_trees, documents, query):
    found = answers(engine_trees, query, Restriction.to_documents(documents))
    assert agree(found)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.sampled_from(sorted(VALUES["CAT1"])), query=st.sampled_from(QUERIES))
def test_opaque_predicates_agree_across_engines(engine_trees, value, query):
    restriction = Restriction(predicate=lambda categories: value not in categories.get("CAT1", ()))
    found = answers(engine_trees, query, restriction)
    assert agree(found)


def test_a_restricted_search_still_returns_k_where_k_exist(engine_trees):
    """The allowed chunks rank low for the query, yet k of them come back (BM25: of those sharing a term)."""
    restriction = Restriction.where_categories(COUNTRY_OF_ORIGIN=["IQ"])
    in_process = engine_trees["in-process"]
    query = "asylum seeker" if in_process.component_name == "BM25Retriever" else "bread recipe"
    found = answers(engine_trees, query, restriction)
    chunks = in_process.require_infra().chunks
    allowed = restriction.row_mask(chunks)
    everything = in_process.retrieve(query, top_k=len(chunks))[0]  # unrestricted: every hit, best first
    allowed_hits = [c.id for c in everything if allowed[chunks.rows_of([c.id])[0]]]
    after_top_k = set(allowed_hits) & {c.id for c in everything[:5]}  # what a filter after top-5 would keep
    assert agree(found) and found["in-process"] == allowed_hits[:5] and len(allowed_hits[:5]) > len(after_top_k)
