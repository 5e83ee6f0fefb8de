"""BooleanQueryRetriever end to end: the boolean preset's hybrid child on tests/data/boolean_corpus.

The tree is components/boolean.json (BM25 + MiniLM hybrid) with paragraph-sized
chunks and ``min_semantic_score`` raised to 0.25: with the shipped MiniLM, every
chunk's cosine to the test phrases lies at least 0.03 away from 0.25 (the relevant
paragraphs score 0.26-0.61, the unrelated ones below 0.22), so the expected document
sets below do not hinge on rounding. The category, text and algebra rules are exact.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.boolean import Category, UnknownCategoryError, serialise
from dashrag.boolean.lexer import ExpressionSyntaxError
from dashrag.core.restriction import Restriction
from dashrag.errors import ConfigError, QueryError
from tests.boolean.strategies import category_documents, trees

from .filter_reference import assert_same_answer
from .rerank_server import RerankServer

pytestmark = pytest.mark.slow  # embeds the small corpus with the real MiniLM model

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "boolean_corpus"
PRESET = json.loads((REPO / "components" / "boolean.json").read_text())
HYBRID_PRESET = json.loads((REPO / "components" / "hybrid.json").read_text())
PARAGRAPHS = {"component": "RecursiveCharacterChunker", "params": {"chunk_size": 200, "chunk_overlap": 0}}
ALL = {p.name for p in CORPUS.glob("*.txt")}


def tree(**params) -> dict:
    return {"component": "BooleanQueryRetriever", "params": {**PRESET["params"], "min_semantic_score": 0.25, **params}}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("boolean")  # one embedding cache for every tree of this module


@pytest.fixture(scope="module")
def build(workdir):
    return lambda **params: dashrag.build(tree(**params), CORPUS, workdir, chunker=PARAGRAPHS)


@pytest.fixture(scope="module")
def retriever(build):
    return build()


def docs(retriever, query: str, **kwargs) -> set[str]:
    return {c.document_id for c in retriever.retrieve(query, **kwargs)[0]}


def scores(retriever, query: str) -> dict[int, float]:
    return {c.id: c.score for c in retriever.retrieve(query)[0]}


# -- the examples ------------------------------------------------------------------

def test_example_semantic_and_country(retriever):
    assert docs(retriever, '"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ') == {
        "asylum_iraq_family.txt", "asylum_iraq_detention.txt", "reception_centre_cleaning.txt"}


def test_example_semantic_and_not_country(retriever):
    # reception_centre_cleaning is tagged SY and IQ, so NOT SY excludes it; the integration
    # courses for refugees are close in meaning (cosine 0.39) and not tagged SY
    assert docs(retriever, '"asylum seeker" AND NOT COUNTRY_OF_ORIGIN=SY') == {
        "asylum_iraq_family.txt", "asylum_iraq_detention.txt", "asylum_afghanistan_appeal.txt",
        "asylum_eritrea_reception.txt", "integration_courses.txt"}


def test_example_semantic_or_and_text(retriever):
    # mop_buying_guide says "mop" but is about buying mops, not kitchen floors or cleanups (cosine 0.21, 0.17)
    assert docs(retriever, """("kitchen floor" OR "cleanup") AND 'mop'""") == {
        "kitchen_floor_care.txt", "reception_centre_cleaning.txt", "flood_cleanup.txt"}


def test_example_categories_only(retriever):
    assert docs(retriever, "(CAT1=A AND CAT2=B) OR CAT3=C") == {
        "asylum_iraq_family.txt", "asylum_syria_hearing.txt", "flood_cleanup.txt",
        "asylum_iraq_detention.txt", "asylum_afghanistan_appeal.txt", "reception_centre_cleaning.txt",
        "integration_courses.txt"}


def test_the_preset_wraps_the_hybrid_preset():
    assert (PRESET["component"], PRESET["params"]["children"]) == ("BooleanQueryRetriever", [HYBRID_PRESET])


# -- combination rules through the component --------------------------------------------------

def test_and_of_two_scored_clauses_is_the_geometric_mean(retriever):
    left, right = scores(retriever, '"kitchen floor"'), scores(retriever, "'mop'")
    combined = scores(retriever, """"kitchen floor" AND 'mop'""")
    both = set(left) & set(right)
    assert {cid: combined[cid] for cid in both} == {
        cid: pytest.approx(math.sqrt(left[cid] * right[cid])) for cid in both
    }


def test_and_with_a_category_keeps_the_semantic_scores(retriever):
    alone = scores(retriever, '"asylum seeker"')
    filtered = scores(retriever, '"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ')
    assert filtered == {cid: pytest.approx(alone[cid]) for cid in filtered}


def test_or_keeps_each_fragment_s_best_score(retriever):
    left, right = scores(retriever, '"kitchen floor"'), scores(retriever, "'mop'")
    union = scores(retriever, """"kitchen floor" OR 'mop'""")
    assert union == {cid: pytest.approx(max(left.get(cid, -1), right.get(cid, -1))) for cid in set(left) | set(right)}


def test_not_stays_within_the_callers_scope(retriever):
    scope = Restriction.to_documents({"asylum_iraq_family.txt", "asylum_syria_hearing.txt", "bread_recipe.txt"})
    assert docs(retriever, "NOT COUNTRY_OF_ORIGIN=IQ", restriction=scope) == {
        "asylum_syria_hearing.txt",
        "bread_recipe.txt",
    }


def test_precedence_without_parentheses_is_not_and_or(retriever):
    assert docs(retriever, "NOT CAT1=A AND CAT2=B OR CAT3=D") == {
        "asylum_afghanistan_appeal.txt",
        "garage_cleanup.txt",  # (NOT CAT1=A) AND CAT2=B
        "asylum_eritrea_reception.txt",
        "kitchen_floor_care.txt",
        "kitchen_renovation.txt",
    }  # CAT3=D


def test_deep_nesting(retriever):
    query = """CAT1=C AND NOT (CAT3=D AND NOT ('mop' AND ("kitchen floor" OR NOT CAT2=A)))"""
    assert docs(retriever, query) == {"kitchen_floor_care.txt", "mop_buying_guide.txt", "garage_cleanup.txt"}


def test_case_sensitive_text_clause(retriever):
    assert (docs(retriever, "@'Microfibre'"), docs(retriever, "@'MICROFIBRE'"), docs(retriever, "'MICROFIBRE'")) == (
        {"mop_buying_guide.txt"},
        set(),
        {"mop_buying_guide.txt"},
    )


def test_text_clause_matches_across_apostrophe_styles(retriever):
    assert docs(retriever, "'don't leave the wet mop'") == {"reception_centre_cleaning.txt"}


def test_empty_query_is_true(retriever):
    chunks, _ = retriever.retrieve("")
    assert ({c.document_id for c in chunks}, {c.score for c in chunks}) == (ALL, {1.0})


CATEGORY_NAMES = ("CAT1", "CAT2", "CAT3", "COUNTRY_OF_ORIGIN")
category_clauses = st.builds(
    Category,
    st.sampled_from(CATEGORY_NAMES),
    st.lists(st.sampled_from(("A", "B", "C", "D", "IQ", "SY", "AF")), min_size=1, max_size=2, unique=True).map(tuple),
)


@settings(max_examples=60, deadline=None)
@given(trees(category_clauses, max_leaves=8))
def test_category_expressions_return_the_set_algebra_over_the_corpus(retriever, expression):
    chunks = retriever.require_infra().chunks
    categories = dict(zip(chunks.document_ids, chunks.document_categories))
    assert docs(retriever, serialise(expression)) == category_documents(expression, categories, set(categories))


# -- restriction before top-k -------------------------------------------------------------


def test_a_category_restricts_the_child_before_its_top_k(build):
    narrow = build(semantic_top_k=2)
    unrestricted = {c.document_id for c in narrow.retrieve('"asylum seeker"')[0]}
    chunks, trace = narrow.retrieve('"asylum seeker" AND COUNTRY_OF_ORIGIN=AF')
    child_output = trace["children"][0]["output"]
    # filtering the unrestricted top 2 afterwards would lose integration_courses;
    # restricted first, the child still fills k
    assert ("integration_courses.txt" in unrestricted, len(child_output), {c.document_id for c in chunks}) == (
        False,
        2,
        {"asylum_afghanistan_appeal.txt", "integration_courses.txt"},
    )


# -- semantic clause scoring ---------------------------------------------------------------


def test_semantic_scores_are_the_dense_cosine(retriever):
    chunks, _ = retriever.retrieve('"asylum seeker"')
    dense = retriever.child.get_children()[1]
    distances = dict(dense.score_chunks([c.id for c in chunks], "asylum seeker"))
    assert [c.score for c in chunks] == [pytest.approx(1 - distances[c.id], abs=1e-5) for c in chunks]


def test_semantic_hits_below_the_minimum_are_dropped(retriever):
    chunks, trace = retriever.retrieve('"kitchen floor"')
    clause = trace["selection"]["clauses"][0]
    assert (min(c.score for c in chunks) >= 0.25, clause["below_min_score"] > 0) == (True, True)


def test_a_short_phrase_uses_the_whole_hybrid(retriever):
    _, trace = retriever.retrieve('"kitchen floor"')
    assert (trace["selection"]["clauses"][0]["retriever"], trace["children"][0]["component"]) == (
        "hybrid",
        "ParallelRetriever",
    )


def test_a_long_phrase_uses_the_dense_node_alone(build):
    short_limit = build(max_words_for_hybrid=1)
    _, trace = short_limit.retrieve('"kitchen floor"')
    assert (trace["selection"]["clauses"][0]["retriever"], trace["children"][0]["component"]) == (
        "DenseEmbeddingRetriever",
        "DenseEmbeddingRetriever",
    )


# -- output --------------------------------------------------------------------------------


def test_return_documents_gives_one_entry_per_document_scored_by_its_best_fragment(build, retriever):
    fragments, _ = retriever.retrieve('"asylum seeker"')
    documents, _ = build(return_documents=True).retrieve('"asylum seeker"')
    best: dict[str, float] = {}
    for f in fragments:
        best[f.document_id] = max(best.get(f.document_id, -1.0), f.score)
    assert {d.document_id: d.score for d in documents} == pytest.approx(best) and len(documents) == len(best)


def test_top_k_cuts_the_result(retriever):
    assert len(retriever.retrieve('"asylum seeker"', top_k=2)[0]) == 2


def test_fragments_name_the_component_and_keep_their_clause_source(retriever):
    chunk = retriever.retrieve("'mop'")[0][0]
    assert (chunk.source, chunk.provenance["clause_source"]) == ("BooleanQueryRetriever", "text")


def test_score_chunks_is_the_child_s(retriever):
    ids = [c.id for c in retriever.require_infra().chunks.chunks[:5]]
    assert retriever.score_chunks(ids, "kitchen floor") == retriever.child.score_chunks(ids, "kitchen floor")


# -- errors --------------------------------------------------------------------------------


def test_a_syntax_error_names_the_column(retriever):
    with pytest.raises(ExpressionSyntaxError, match=r"^col 19: expected a value after '='"):
        retriever.retrieve('"asylum" AND CAT1=')


def test_an_unknown_category_lists_the_known_ones(retriever):
    with pytest.raises(
        UnknownCategoryError,
        match=r"unknown category 'CONTRY_OF_ORIGIN' .*known categories: CAT1, CAT2, CAT3, COUNTRY_OF_ORIGIN",
    ):
        retriever.retrieve("CONTRY_OF_ORIGIN=IQ")


def test_a_query_that_is_not_a_string_is_refused(retriever):
    with pytest.raises(QueryError):
        retriever.retrieve(None)


def test_automatic_reranking_without_a_reranker_is_a_config_error():
    with pytest.raises(ConfigError, match="automatically_rerank needs a reranker"):
        dashrag.validate_and_transform(tree(automatically_rerank=True))


# -- trace ---------------------------------------------------------------------------------


def test_trace_holds_the_syntax_tree_with_fragments_and_timings(retriever):
    chunks, trace = retriever.retrieve("""("kitchen floor" OR "cleanup") AND 'mop'""")
    root = json.loads(json.dumps(trace))["selection"]["tree"]
    listed = {tuple(entry[:2]) for entry in root["top"]}
    assert (
        [c["node"] for c in root["children"]],
        [g["node"] for g in root["children"][0]["children"]],
        listed == {(c.id, c.document_id) for c in chunks},
        set(trace["selection"]["timings"]),
    ) == (
        ['"kitchen floor" OR "cleanup"', "'mop'"],
        ['"kitchen floor"', '"cleanup"'],
        True,
        {"parse_ms", "evaluate_ms", "select_ms"},
    )


def test_trace_children_are_the_child_retriever_calls(retriever):
    _, trace = retriever.retrieve("""("kitchen floor" OR "cleanup") AND 'mop'""")
    assert [(c["component"], c["query"]) for c in trace["children"]] == [
        ("ParallelRetriever", "kitchen floor"),
        ("ParallelRetriever", "cleanup"),
    ]


# -- persistence ---------------------------------------------------------------------------

EXAMPLES = [
    '"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ',
    '"asylum seeker" AND NOT COUNTRY_OF_ORIGIN=SY',
    """("kitchen floor" OR "cleanup") AND 'mop'""",
    "(CAT1=A AND CAT2=B) OR CAT3=C",
    "@'Microfibre'",
]


def test_save_and_load_answer_the_same_ranking_and_scores(retriever, tmp_path):
    """The loaded tree embeds queries with the saved ONNX export, not torch: float32 products that may differ
    in the last bit, so the scores agree to 1e-5 (the project's rule for "the same answer")."""
    retriever.save(tmp_path / "saved")
    loaded = dashrag.load(tmp_path / "saved")
    for query in EXAMPLES:
        found, expected = loaded.retrieve(query)[0], retriever.retrieve(query)[0]
        assert_same_answer(found, expected, query)
        assert [c.source for c in found] == [c.source for c in expected], query


# -- reranking -----------------------------------------------------------------------------


def shortest_first(query: str, text: str) -> float:
    return 1.0 / len(text)


@pytest.fixture(scope="module")
def rerank_server():
    with RerankServer(score=shortest_first) as server:
        yield server


def with_reranker(build, server, **params):
    return build(
        reranker={"component": "HttpReranker", "params": {"api_base": server.url, "batch_size": 4}}, **params
    )


def test_the_reranker_reranks_with_the_semantic_clauses_only(build, rerank_server):
    reranking = with_reranker(build, rerank_server)
    rerank_server.requests.clear()
    chunks, trace = reranking.retrieve(""""kitchen floor" AND 'mop' AND NOT "garage" AND CAT1=C""")
    assert (
        set(rerank_server.queries),
        trace["selection"]["decisions"]["path"],
        [c.score for c in chunks] == sorted((shortest_first("", c.chunk.text) for c in chunks), reverse=True),
    ) == ({"kitchen floor"}, "reranked", True)


def test_without_a_semantic_clause_the_reranker_is_not_called(build, rerank_server):
    reranking = with_reranker(build, rerank_server)
    rerank_server.requests.clear()
    _, trace = reranking.retrieve("'mop' AND CAT1=C")
    assert (rerank_server.requests, trace["selection"]["decisions"]["path"]) == ([], "fast")


def test_automatic_reranking_reranks_each_branch_with_its_own_text(build, rerank_server):
    reranking = with_reranker(build, rerank_server, automatically_rerank=True)
    rerank_server.requests.clear()
    reranking.retrieve("""("kitchen floor" OR "cleanup") AND 'mop'""")
    assert set(rerank_server.queries) == {
        '"kitchen floor"',
        '"cleanup"',
        '"kitchen floor" OR "cleanup"',
        "'mop'",
        "kitchen floor AND cleanup",
    }


def test_rerank_texts_are_cut_to_rerank_max_chars(build, rerank_server):
    reranking = with_reranker(build, rerank_server, rerank_max_chars=40)
    rerank_server.requests.clear()
    reranking.retrieve('"asylum seeker"')
    assert (max(len(t) for t in rerank_server.texts), len(rerank_server.texts) > 0) == (40, True)


def test_reranking_runs_in_rounds_of_rerank_round_size(build, rerank_server):
    reranking = with_reranker(build, rerank_server, rerank_round_size=3)
    rerank_server.requests.clear()
    _, trace = reranking.retrieve('"asylum seeker"')
    rounds = trace["selection"]["decisions"]["rerank"]["rounds"]
    assert (max(rounds), len(rerank_server.requests), sum(rounds)) == (3, len(rounds), len(rerank_server.texts))


def test_low_reranker_scores_fall_back_to_the_diversity_tier(build, rerank_server):
    reranking = with_reranker(build, rerank_server, fallback_top_n=2, min_documents=4, max_fragments=10)
    chunks, trace = reranking.retrieve('"asylum seeker"')  # every score 1/len(text) < 0.1
    assert (trace["selection"]["decisions"]["tiers"]["tier"], len({c.document_id for c in chunks})) == ("diversity", 4)
