"""Evaluating queries over the small categorised corpus with a real leaf evaluator."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.boolean import Category, FragmentSet, Scope, evaluate, parse, serialise
from dashrag.boolean.evaluate import tree_summary
from dashrag.documents.model import Chunk

from .corpus_fixture import CorpusLeafEvaluator, build_corpus, category_fragments
from .strategies import category_documents, trees

ALL_DOCUMENTS = {
    "asylum_afghanistan_appeal", "asylum_eritrea_reception", "asylum_iraq_detention", "asylum_iraq_family",
    "asylum_syria_hearing", "bread_recipe", "flood_cleanup", "garage_cleanup", "integration_courses",
    "kitchen_floor_care", "kitchen_renovation", "mop_buying_guide", "reception_centre_cleaning",
}


@pytest.fixture(scope="module")
def corpus():
    return build_corpus()


def run(corpus, query: str, **kwargs):
    _, _, scope, evaluator = corpus
    return evaluate(parse(query), evaluator, kwargs.pop("scope", scope), **kwargs)


def documents(corpus, query: str, **kwargs) -> set[str]:
    return set(run(corpus, query, **kwargs)[0].document_ids)


def test_corpus_holds_every_document(corpus):
    assert {d.id for d in corpus[0]} == ALL_DOCUMENTS


def test_example_semantic_and_country(corpus):
    assert documents(corpus, '"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ') == {
        "asylum_iraq_family", "asylum_iraq_detention", "reception_centre_cleaning",
    }


def test_example_category_filter_keeps_the_semantic_scores(corpus):
    filtered, _ = run(corpus, '"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ')
    alone, _ = run(corpus, '"asylum seeker"')
    assert {cid: f.score for cid, f in filtered.fragments.items()} == {
        cid: alone.fragments[cid].score for cid in filtered.fragments
    }


def test_example_semantic_and_not_country(corpus):
    # reception_centre_cleaning is tagged SY and IQ, so NOT SY excludes it too
    assert documents(corpus, '"asylum seeker" AND NOT COUNTRY_OF_ORIGIN=SY') == {
        "asylum_iraq_family", "asylum_iraq_detention", "asylum_afghanistan_appeal", "asylum_eritrea_reception",
    }


def test_example_semantic_or_and_text(corpus):
    # 'mop' is whole-word: "mops the kitchen floor" alone would not match, but these three say "mop"
    assert documents(corpus, """("kitchen floor" OR "cleanup") AND 'mop'""") == {
        "kitchen_floor_care", "reception_centre_cleaning", "flood_cleanup",
    }


def test_example_categories_only(corpus):
    assert documents(corpus, "(CAT1=A AND CAT2=B) OR CAT3=C") == {
        "asylum_iraq_family", "asylum_syria_hearing", "flood_cleanup",  # CAT1=A AND CAT2=B
        "asylum_iraq_detention", "asylum_afghanistan_appeal", "reception_centre_cleaning", "integration_courses",
    }


def test_and_before_or_without_parentheses(corpus):
    assert documents(corpus, "CAT1=A AND CAT2=B OR CAT3=C") == documents(corpus, "(CAT1=A AND CAT2=B) OR CAT3=C")


def test_parentheses_change_the_grouping(corpus):
    assert documents(corpus, "CAT1=A AND (CAT2=B OR CAT3=C)") == {
        "asylum_iraq_family", "asylum_iraq_detention", "asylum_syria_hearing", "flood_cleanup",
    }


def test_not_before_and_without_parentheses(corpus):
    assert documents(corpus, "NOT CAT1=A AND CAT2=B") == {"asylum_afghanistan_appeal", "garage_cleanup"}


def test_not_of_a_group(corpus):
    assert documents(corpus, "NOT (CAT1=A AND CAT2=B)") == ALL_DOCUMENTS - {
        "asylum_iraq_family", "asylum_syria_hearing", "flood_cleanup",
    }


def test_deep_nesting_mixes_every_clause_kind(corpus):
    query = """CAT1=C AND NOT (CAT3=D AND NOT ('mop' AND ("kitchen floor" OR NOT CAT2=A)))"""
    # "kitchen floor" OR NOT CAT2=A: every document but mop_buying_guide and integration_courses
    # 'mop' AND that: reception_centre_cleaning, kitchen_floor_care, flood_cleanup
    # CAT3=D AND NOT that: asylum_eritrea_reception, kitchen_renovation
    # CAT1=C AND NOT that: kitchen_floor_care, mop_buying_guide, garage_cleanup (kitchen_renovation excluded)
    assert documents(corpus, query) == {"kitchen_floor_care", "mop_buying_guide", "garage_cleanup"}


def test_case_sensitive_text_clause(corpus):
    assert (documents(corpus, "@'Microfibre'"), documents(corpus, "'Microfibre'")) == (
        {"mop_buying_guide"}, {"mop_buying_guide"}
    )


def test_case_sensitive_text_clause_refuses_other_case(corpus):
    assert documents(corpus, "@'MICROFIBRE'") == set()


def test_text_clause_matches_across_apostrophe_styles(corpus):
    # the files write "Don’t" (curly) in one and "Don't" (straight) in the other
    assert documents(corpus, "'don't leave the wet mop'") == {"reception_centre_cleaning"}


def test_empty_query_returns_every_fragment_as_a_filter(corpus):
    result, _ = run(corpus, "")
    assert (len(result), result.is_filter) == (len(corpus[1]), True)


def test_category_filter_runs_before_the_semantic_top_k(corpus):
    documents_, chunks, scope, _ = corpus
    top2 = CorpusLeafEvaluator(documents_, chunks, semantic_top_k=2)
    result, _ = evaluate(parse('"asylum seeker" AND COUNTRY_OF_ORIGIN=AF'), top2, scope)
    # unrestricted, the top 2 for "asylum seeker" are the Iraqi detention and reception documents
    assert result.document_ids == {"asylum_afghanistan_appeal"}


def test_semantic_leaf_receives_the_narrowed_scope(corpus):
    documents_, chunks, scope, _ = corpus
    evaluator = CorpusLeafEvaluator(documents_, chunks)
    evaluate(parse('"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ'), evaluator, scope)
    assert [(type(c).__name__, ids) for c, ids in evaluator.calls] == [
        ("Category", scope.document_ids),
        ("Semantic", frozenset({"asylum_iraq_family", "asylum_iraq_detention", "reception_centre_cleaning"})),
    ]


def test_caller_scope_bounds_not(corpus):
    _, _, scope, _ = corpus
    narrow = scope.restricted_to({"asylum_iraq_family", "asylum_syria_hearing", "bread_recipe"})
    assert documents(corpus, "NOT COUNTRY_OF_ORIGIN=IQ", scope=narrow) == {"asylum_syria_hearing", "bread_recipe"}


def test_leaf_results_outside_the_scope_are_cut(corpus):
    _, _, scope, evaluator = corpus
    narrow = scope.restricted_to({"flood_cleanup"})
    ignores_scope = lambda clause, _scope: evaluator(clause, scope)  # noqa: E731 - a leaf that ignores its restriction
    result, _ = evaluate(parse("'mop'"), ignores_scope, narrow)
    assert result.document_ids == {"flood_cleanup"}


def test_trace_records_every_node(corpus):
    _, trace = run(corpus, """("kitchen floor" OR "cleanup") AND 'mop'""")
    assert [
        trace["node"],
        [c["node"] for c in trace["children"]],
        [g["node"] for g in trace["children"][0]["children"]],
    ] == [
        """("kitchen floor" OR "cleanup") AND 'mop'""",
        ['"kitchen floor" OR "cleanup"', "'mop'"],
        ['"kitchen floor"', '"cleanup"'],
    ]


def test_trace_counts_match_the_result(corpus):
    result, trace = run(corpus, '"asylum seeker" AND NOT COUNTRY_OF_ORIGIN=SY')
    assert (trace["fragments"], trace["documents"], trace["top_scores"]) == (
        len(result),
        len(result.document_ids),
        [round(f.score, 6) for f in result.ranked()[:5]],
    )


def test_trace_marks_filters_and_is_json(corpus):
    _, trace = run(corpus, '"asylum seeker" AND NOT COUNTRY_OF_ORIGIN=SY')
    decoded = json.loads(json.dumps(trace))
    assert [c["is_filter"] for c in decoded["children"]] == [False, True] and decoded["elapsed_ms"] >= 0


def test_branch_reranking_uses_each_branch_text(corpus):
    _, chunks, scope, evaluator = corpus
    seen: list[str] = []

    def rerank_by_length(text: str, fragments: FragmentSet):
        seen.append(text)
        return [f.rescored(len(f.chunk.text) / 1000.0, source="rerank") for f in fragments.fragments.values()]

    result, trace = evaluate(
        parse("""("kitchen floor" OR "cleanup") AND 'mop'"""), evaluator, scope, rerank_branch=rerank_by_length
    )
    assert (seen, trace["children"][0]["branch_rerank"]["query"]) == (
        ['"kitchen floor"', '"cleanup"', '"kitchen floor" OR "cleanup"', "'mop'"],
        '"kitchen floor" OR "cleanup"',
    )


# -- property: category expressions evaluate to the set algebra over documents -----------------

CATEGORY_NAMES = ("CAT1", "CAT2", "CAT3")
VALUES = ("A", "B", "C")
category_clauses = st.builds(
    Category,
    st.sampled_from(CATEGORY_NAMES),
    st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True).map(tuple),
)
assignments = st.lists(
    st.tuples(
        st.dictionaries(
            st.sampled_from(CATEGORY_NAMES), st.lists(st.sampled_from(VALUES), max_size=2, unique=True).map(tuple)
        ),
        st.integers(min_value=1, max_value=3),
    ),
    min_size=1,
    max_size=8,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(trees(category_clauses, max_leaves=10), assignments)
def test_category_expressions_return_the_set_algebra_result(tree, assignment):
    chunks, categories = [], {}
    for number, (cats, chunk_count) in enumerate(assignment):
        doc = f"doc{number}"
        categories[doc] = cats
        for position in range(chunk_count):
            chunks.append(Chunk(len(chunks), doc, position, f"{doc} part {position}", metadata=cats))
    scope = Scope.from_chunks(chunks)
    result, _ = evaluate(parse(serialise(tree)), lambda clause, s: category_fragments(clause, s, chunks), scope)
    assert result.document_ids == category_documents(tree, categories, set(categories))


# -- trace listings and leaves that answer with a fragment set ---------------------------------


def test_trace_lists_each_node_s_best_fragments(corpus):
    result, trace = run(corpus, """"kitchen floor" AND 'mop'""", trace_fragments=3)
    assert trace["top"] == [[f.id, f.document_id, round(f.score, 6)] for f in result.ranked(3)]


def test_trace_lists_no_fragments_of_an_unbuilt_filter(corpus):
    _, trace = run(corpus, '"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ', trace_fragments=3)
    # the category leaf of this fixture answers with a list (built); a lazy scope filter stays unbuilt
    _, not_trace = run(corpus, '"asylum seeker" AND NOT COUNTRY_OF_ORIGIN=IQ', trace_fragments=3)
    assert (len(trace["children"][1]["top"]), not_trace["children"][1]["top"]) == (3, [])


def test_tree_summary_renders_every_node(corpus):
    _, trace = run(corpus, """("kitchen floor" OR "cleanup") AND 'mop'""")
    line = tree_summary(trace)
    assert [line.count("["), line.count(";"), line.startswith("""("kitchen floor" OR "cleanup") AND 'mop'  """)] == [
        2,
        2,
        True,
    ]


def test_a_leaf_answering_with_a_fragment_set_is_cut_to_the_scope(corpus):
    _, _, scope, _ = corpus
    narrow = scope.restricted_to({"flood_cleanup", "bread_recipe"})
    every_document = lambda clause, _scope: scope.filter_fragments(scope.document_ids, "category")  # noqa: E731
    result, _ = evaluate(parse("CAT1=A"), every_document, narrow)
    assert (result.document_ids, result.is_filter) == ({"flood_cleanup", "bread_recipe"}, True)
