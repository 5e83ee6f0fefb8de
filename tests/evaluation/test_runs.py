"""Max-pooling chunks to documents, trec_eval's ranking order, and TREC run files."""

from __future__ import annotations

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.documents.model import Chunk, ScoredChunk
from dashrag.errors import PersistenceError, RetrievalError
from dashrag.evaluation.runs import (
    cut,
    format_trec_run,
    max_pool,
    pool_chunks,
    pool_output,
    ranked,
    read_trec_run,
    run_from_results,
    write_trec_run,
)

document_ids = st.text(alphabet="abcdef0123456789", min_size=1, max_size=4)
scores = st.floats(allow_nan=False, allow_infinity=False, width=64)
pairs = st.lists(st.tuples(document_ids, scores), max_size=30)
runs = st.dictionaries(document_ids, st.dictionaries(document_ids, scores, max_size=8), max_size=5)


def _scored(chunk_id, document_id, position, score):
    return ScoredChunk(Chunk(chunk_id, document_id, position, "text"), score, "test")


def test_a_document_scores_its_best_chunk():
    chunks = [_scored(0, "a", 0, 0.2), _scored(1, "b", 0, 0.5), _scored(2, "a", 1, 0.9), _scored(3, "a", 2, 0.1)]
    assert pool_chunks(chunks) == {"a": 0.9, "b": 0.5}


def test_trace_output_pools_like_chunks():
    output = [_scored(0, "a", 0, -3.0).to_json(), _scored(1, "a", 1, -1.0).to_json()]
    assert pool_output(output) == {"a": -1.0}


def test_run_from_results_pools_each_query():
    results = {"q1": [_scored(0, "a", 0, 1.0), _scored(1, "a", 1, 2.0)], "q2": []}
    assert run_from_results(results) == {"q1": {"a": 2.0}, "q2": {}}


@given(pairs)
def test_max_pool_is_the_maximum_per_document(items):
    pooled = max_pool(items)
    assert pooled == {d: max(s for e, s in items if e == d) for d, _ in items}


@given(pairs, st.randoms())
def test_max_pool_does_not_depend_on_input_order(items, rng):
    shuffled = list(items)
    rng.shuffle(shuffled)
    assert max_pool(shuffled) == max_pool(items)


def test_a_nan_score_is_refused():
    with pytest.raises(RetrievalError, match="'a'"):
        max_pool([("a", float("nan"))])


def test_ties_are_ranked_as_trec_eval_ranks_them():
    scores = {"a": 0.5, "b": 0.5, "c": 0.5, "z": 0.1}
    ours = [d for d, _ in ranked(scores)]
    # recip_rank of a run whose only relevant document is d is 1 / (trec_eval's rank of d)
    for rank, document_id in enumerate(ours, start=1):
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {document_id: 1}}, {"recip_rank"})
        assert evaluator.evaluate({"q": scores})["q"]["recip_rank"] == pytest.approx(1 / rank)


@given(runs, st.integers(1, 10))
def test_cut_keeps_the_top_of_the_ranking(run, depth):
    assert {q: ranked(docs) for q, docs in cut(run, depth).items()} == {
        q: ranked(docs)[:depth] for q, docs in run.items()
    }


def test_trec_lines_are_sorted_and_ranked_from_one():
    text = format_trec_run({"q2": {"x": 1.0}, "q1": {"a": 0.25, "b": 0.75}}, tag="bm25")
    assert text == "q1 Q0 b 1 0.75 bm25\nq1 Q0 a 2 0.25 bm25\nq2 Q0 x 1 1.0 bm25\n"


def test_depth_limits_documents_per_query():
    text = format_trec_run({"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, depth=2)
    assert [line.split()[2] for line in text.splitlines()] == ["a", "b"]


@settings(max_examples=50, deadline=None)
@given(runs)
def test_a_written_run_reads_back_identically(tmp_path_factory, run):
    path = write_trec_run(run, tmp_path_factory.mktemp("runs") / "run.trec")
    assert read_trec_run(path) == {q: docs for q, docs in run.items() if docs}


@pytest.mark.parametrize(
    "run,tag", [({"q": {"doc one": 1.0}}, "t"), ({"q 1": {"d": 1.0}}, "t"), ({"q": {"d": 1.0}}, "my tag")]
)
def test_whitespace_in_ids_or_tag_is_refused(run, tag):
    with pytest.raises(PersistenceError, match="whitespace"):
        format_trec_run(run, tag=tag)


@pytest.mark.parametrize(
    "content,problem",
    [
        ("q Q0 d 1 0.5 t\nq Q0 e 2 0.4\n", "expected 6 fields"),
        ("q Q0 d 1 0.5 t\nq Q0 e two 0.4 t\n", "not a number"),
        ("q Q0 d 1 0.5 t\nq Q0 d 2 0.4 t\n", "listed twice"),
    ],
)
def test_a_bad_run_line_names_file_and_line(tmp_path, content, problem):
    path = tmp_path / "bad.trec"
    path.write_text(content)
    with pytest.raises(PersistenceError, match=rf"bad\.trec:2: .*{problem}"):
        read_trec_run(path)


def test_a_missing_run_file_is_named(tmp_path):
    with pytest.raises(PersistenceError, match="missing.trec"):
        read_trec_run(tmp_path / "missing.trec")
