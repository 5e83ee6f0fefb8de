"""The boolean pipeline against the reference's contract: its defaults, its worked example end to end through
the component (219 fragments, best 0.0237, tier 1 empty, tier 2 the top 50 over 8 documents, tier 3 five
documents), the fill-up as a separate step, category-only stubs and operator keywords as values."""

from __future__ import annotations

import re

import pytest

from dashrag.boolean.lexer import ExpressionSyntaxError
from dashrag.boolean.parser import parse
from dashrag.core.factory import build_component
from dashrag.documents.model import Chunk

from .rerank_server import RerankServer

TOP, REST = 50, 169  # the reference's 219 fragments


def example_score(query: str, text: str) -> float:
    """The reranker's scores of the worked example: fragment i's number is in its text."""
    found = re.search(r"fragment (\d+)", text)
    assert found is not None, text
    i = int(found.group(1))
    return 0.0237 - i * 0.0001 if i < TOP else 0.0187 - (i - TOP) * 0.0001


def example_chunks() -> list[Chunk]:
    """219 fragments: the top 50 cycle through 8 documents, the other 169 through 20 more."""
    owners = [f"top{i % 8}" for i in range(TOP)] + [f"low{i % 20}" for i in range(REST)]
    positions: dict[str, int] = {}
    chunks = []
    for i, document in enumerate(owners):
        position = positions.get(document, 0)
        positions[document] = position + 1
        text = f"fragment {i} of the worked example"
        chunks.append(Chunk(i, document, position, text, 0, len(text), {"GROUP": ("all",)}))
    return chunks


@pytest.fixture(scope="module")
def server():
    with RerankServer(score=example_score) as running:
        yield running


def example_tree(url: str, **params) -> dict:
    return {"component": "BooleanQueryRetriever", "params": {
        "children": [{"component": "BM25Retriever", "params": {"top_k": 5}}],
        "reranker": {"component": "HttpReranker", "params": {"api_base": url}}, **params}}


def built(url: str, tmp_path, **params):
    tree = build_component(example_tree(url, **params), "retriever")
    tree.inject_infra(tmp_path, example_chunks(), None)  # the reference's inject_infra shape
    tree.init_model()
    return tree


def test_defaults_are_the_references():
    p = build_component({"component": "BooleanQueryRetriever", "params": {
        "children": [{"component": "BM25Retriever", "params": {}}]}}).params
    assert (p.return_documents, p.semantic_top_k, p.min_document_score, p.top_m, p.fill_up) == (
        True, 200, 0.05, 1000, False)


def test_the_worked_example_gives_the_references_result_through_the_component(server, tmp_path):
    documents, trace = built(server.url, tmp_path).retrieve('"fragment" OR GROUP=all')
    decisions = trace["selection"]["decisions"]
    assert (decisions["candidates"], sum(decisions["rerank"]["rounds"]), decisions["rerank"]["query"]) == (
        219, 219, "fragment")
    tiers = decisions["tiers"]
    assert (tiers["best_score"], tiers["qualified"], tiers["tier"], tiers["selected"], tiers["documents"]) == (
        pytest.approx(0.0237), 0, "diversity", 50, 8)
    assert [d.document_id for d in documents] == ["top0", "top1", "top2", "top3", "top4"]
    assert decisions["documents"] == {"tier3_kept": 5, "returned": 5} and "fill_up" not in decisions


def test_the_fill_up_runs_in_the_component_only_when_asked(server, tmp_path):
    fragments, trace = built(server.url, tmp_path, return_documents=False, fill_up=True,
                             fallback_top_n=3, min_documents=1, max_fragments=3).retrieve('"fragment" OR GROUP=all')
    fill = trace["selection"]["decisions"]["fill_up"]
    assert (len(fragments), fill["triggered"], fill["added"], fill["fragments"]) == (10, True, 7, 10)


def test_tiers_apply_in_order_threshold_first(server, tmp_path):
    fragments, trace = built(server.url, tmp_path, return_documents=False, min_score=0.02005).retrieve(
        '"fragment" OR GROUP=all')
    tiers = trace["selection"]["decisions"]["tiers"]
    # 37 fragments score at least 0.02005 (0.0237 down to 0.0201): tier 1 decides, tier 2 never runs
    assert (tiers["tier"], tiers["qualified"], len(fragments)) == ("threshold", 37, 37)


def test_tier_one_is_capped_at_max_fragments(server, tmp_path):
    fragments, trace = built(server.url, tmp_path, return_documents=False, min_score=0.0, fallback_top_n=20,
                             max_fragments=30).retrieve('"fragment" OR GROUP=all')
    tiers = trace["selection"]["decisions"]["tiers"]
    assert (tiers["tier"], tiers["qualified"], len(fragments)) == ("threshold", 219, 30)


def test_a_category_only_query_returns_document_stubs(server, tmp_path):
    stubs, trace = built(server.url, tmp_path).retrieve("GROUP=all AND NOT GROUP=none")
    assert trace["selection"]["decisions"]["path"] == "category_only" and len(stubs) == 28
    assert {(s.chunk.text, s.score, s.provenance["fragment_id"] == s.document_id) for s in stubs} == {
        (None, 1.0, True)}


@pytest.mark.parametrize("query, column", [("CAT= AND", 6), ("CAT=AND", 5), ("CAT=a,OR", 7), ("X=1 AND CAT= NOT", 14)])
def test_an_operator_keyword_is_never_a_category_value(query, column):
    with pytest.raises(ExpressionSyntaxError) as info:
        parse(query)
    assert info.value.column == column and str(info.value).startswith(f"col {column}: expected a value after")


def test_a_quoted_keyword_is_a_category_value():
    assert parse('CAT="AND"').values == ("AND",)


@pytest.mark.parametrize("return_documents", [True, False])
def test_at_most_10_documents_after_reranking_max_reranking_output_doc(server, tmp_path, return_documents):
    """Every fragment qualifies (min_score 0): tier 1 holds the best 100 over all 28 documents; 10 come out."""
    capped, trace = built(server.url, tmp_path, min_score=0.0, return_documents=return_documents).retrieve(
        '"fragment" OR GROUP=all')
    wider, _ = built(server.url, tmp_path / "wider", min_score=0.0, return_documents=return_documents,
                     max_reranked_documents=50).retrieve('"fragment" OR GROUP=all')
    assert len({f.document_id for f in wider}) == 28  # without the cap, more than 10 documents come out
    documents = list(dict.fromkeys(f.document_id for f in capped))
    assert documents == list(dict.fromkeys(f.document_id for f in wider))[:10]  # the best 10 of them
    assert trace["selection"]["decisions"]["max_reranked_documents"] == {"limit": 10, "dropped_documents": 18}


def test_min_documents_above_max_reranked_documents_is_refused_at_validation(server):
    from dashrag.errors import ConfigError

    with pytest.raises(ConfigError, match="max_reranked_documents"):
        build_component(example_tree(server.url, min_documents=12), "retriever")


def keyword_boolean(tmp_path, **params):
    import dashrag
    from tests.conftest import EXAMPLE_CORPUS

    tree = {"component": "BooleanQueryRetriever", "params": {
        "children": [{"component": "BM25Retriever", "params": {"top_k": 20}}], "return_documents": False, **params}}
    return dashrag.build(tree, EXAMPLE_CORPUS, tmp_path / "work")


def test_clause_scores_stay_within_0_and_1_for_text_clauses(tmp_path):
    fragments, _ = keyword_boolean(tmp_path).retrieve("'term frequency'")
    scores = [f.score for f in fragments]
    assert fragments and all(0.0 <= s <= 1.0 for s in scores) and max(scores) == 1.0
    assert max(f.provenance["bm25"] for f in fragments) > 1.0  # the raw BM25 would have left 0..1


def test_clause_scores_stay_within_0_and_1_for_semantic_clauses_of_any_score_mode(tmp_path):
    fragments, _ = keyword_boolean(tmp_path, semantic_score="child", min_semantic_score=0.0).retrieve(
        '"term frequency saturation"')
    assert fragments and all(0.0 <= f.score <= 1.0 for f in fragments)
    assert max(f.provenance["child_score"] for f in fragments) > 1.0  # the child's BM25 would have left 0..1


def asylum_chunks() -> list[Chunk]:
    """Hearing records of two countries; the best match of the phrase is an Iranian record, so the Afghan ones
    score below 1.0 on their own."""
    texts = [("IR", "asylum seeker hearing asylum seeker hearing transcript of the asylum seeker"),
             ("AF", "the hearing of the asylum seeker was adjourned"),
             ("AF", "an asylum seeker from Herat described the journey"),
             ("AF", "weather records of the province"),
             ("IR", "a seeker of work in the city"),
             ("SY", "the hearing was held in the morning")]
    return [Chunk(i, f"doc{i}", 0, text, 0, len(text), {"COUNTRY_OF_ORIGIN": (country,)})
            for i, (country, text) in enumerate(texts)]


@pytest.mark.parametrize("clause", ['"asylum seeker hearing"', "'asylum seeker'"])
def test_an_and_with_a_pure_filter_keeps_the_other_branchs_scores_as_they_are(clause, tmp_path):
    tree = build_component({"component": "BooleanQueryRetriever", "params": {
        "children": [{"component": "BM25Retriever", "params": {"top_k": 20}}], "return_documents": False,
        "min_semantic_score": 0.0, "min_document_score": 0.0}}, "retriever")
    tree.inject_infra(tmp_path, asylum_chunks(), None)
    tree.init_model()
    alone = {f.id: f.score for f in tree.retrieve(clause)[0]}
    filtered = {f.id: f.score for f in tree.retrieve(f"{clause} AND COUNTRY_OF_ORIGIN=AF")[0]}
    afghan = {i for i, c in enumerate(asylum_chunks()) if c.metadata["COUNTRY_OF_ORIGIN"] == ("AF",)}
    assert set(filtered) <= afghan and len(filtered) >= 2
    assert filtered == pytest.approx({i: alone[i] for i in filtered})
    assert max(filtered.values()) < 1.0  # the clause's best is the Iranian record's, not the filter's survivors'
