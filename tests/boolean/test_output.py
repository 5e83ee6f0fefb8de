"""From evaluated fragments to the result: fast path, reranked path, documents."""

from __future__ import annotations

from dashrag.boolean import SelectionThresholds, fast_path_select, parse
from dashrag.boolean.output import as_documents, select_output
from dashrag.documents.model import Chunk, ScoredChunk

TEXTS = {1: "short", 2: "a longer text", 3: "the longest text of all", 4: "mid text", 5: "x"}
DOCS = {1: "d1", 2: "d1", 3: "d2", 4: "d3", 5: "d4"}


def frag(cid: int, score: float) -> ScoredChunk:
    return ScoredChunk(Chunk(cid, DOCS[cid], cid, TEXTS[cid]), score, "semantic")


RANKED = [frag(3, 0.9), frag(1, 0.7), frag(2, 0.5), frag(4, 0.3), frag(5, 0.05)]
T = SelectionThresholds(min_document_score=0.1, min_score=0.5, fallback_top_n=2, min_documents=2, max_fragments=4,
                        fill_up_target_fragments=3)


def by_length(query: str, texts, fragments=()):
    return [len(t) / 100 for t in texts]


def test_without_a_reranker_the_fast_path_decides():
    out, record = select_output(parse('"q"'), RANKED, T, False, None)
    assert (out, record["path"]) == (fast_path_select(RANKED, T), "fast")


def test_a_query_without_semantic_clauses_is_not_reranked():
    out, record = select_output(parse("'q' AND CAT=A"), RANKED, T, False, by_length)
    assert (record["path"], "why_not_reranked" in record) == ("fast", True)


def test_the_reranked_path_scores_with_the_semantic_clauses():
    seen = []
    out, record = select_output(parse('"alpha" AND NOT "beta" AND \'t\''), RANKED, T, False,
                                lambda q, texts, fragments: seen.append(q) or by_length(q, texts))
    assert (seen, record["path"]) == (["alpha"], "reranked")


def test_the_reranked_path_applies_the_tiers_and_leaves_the_fill_up_to_a_later_step():
    out, record = select_output(parse('"q"'), RANKED, T, False, by_length)
    # by length/100 every score is below 0.5: tier 2 takes the top 2 (chunks 3, 2: d2, d1), which cover
    # min_documents 2; the fill-up is the reference's separate step, so it does not run here
    assert ([f.id for f in out], record["tiers"]["tier"], "fill_up" in record) == ([3, 2], "diversity", False)


def test_the_fill_up_runs_inside_only_when_asked():
    out, record = select_output(parse('"q"'), RANKED, T, False, by_length, run_fill_up=True)
    # the best below-threshold candidate (4: 0.08) tops the 2 fragments up to the target of 3 fragments
    assert ([f.id for f in out], record["fill_up"]["added"]) == ([3, 2, 4], 1)


def test_a_category_only_query_returns_document_stubs():
    out, record = select_output(parse("CAT=A"), RANKED, T, True, by_length, only_filters=True)
    assert record["path"] == "category_only"
    assert [(d.document_id, d.id, d.chunk.text, d.score, d.provenance["fragment_id"]) for d in out] == [
        ("d1", 1, None, 1.0, "d1"), ("d2", 3, None, 1.0, "d2"), ("d3", 4, None, 1.0, "d3"), ("d4", 5, None, 1.0, "d4")]


def test_documents_are_scored_by_their_best_fragment():
    documents = as_documents(RANKED)
    assert [(d.document_id, d.score, d.provenance["document_fragments"]) for d in documents] == [
        ("d2", 0.9, [3]), ("d1", 0.7, [1, 2]), ("d3", 0.3, [4]), ("d4", 0.05, [5])]


def test_reranked_documents_apply_the_tiers_in_order_then_the_document_safety_net():
    out, record = select_output(parse('"q"'), RANKED, T, True, by_length)
    # tiers 1-2 select chunks 3 and 2 (d2 0.23, d1 0.13); tier 3 keeps at least min_documents 2 of them
    assert ([d.document_id for d in out], record["documents"]) == (["d2", "d1"], {"tier3_kept": 2, "returned": 2})


def test_tier_three_tops_up_from_the_reranked_list_when_the_selection_covers_too_few_documents():
    t = SelectionThresholds(min_score=0.5, fallback_top_n=1, min_documents=3, max_fragments=1)
    out, _ = select_output(parse('"q"'), RANKED, t, True, by_length)
    assert [d.document_id for d in out] == ["d2", "d1", "d3"]
