"""Reading BEIR queries and qrels: the real SciFact folder and every way a folder can be broken."""

from __future__ import annotations

import json

import pytest

from dashrag.errors import CorpusError
from dashrag.evaluation.beir import load_split, read_qrels, read_queries


def _folder(tmp_path, queries=None, qrels=None, split="test"):
    queries = (
        queries
        if queries is not None
        else [{"_id": "1", "text": "one"}, {"_id": "2", "text": "two"}, {"_id": "3", "text": "three"}]
    )
    qrels = qrels if qrels is not None else "query-id\tcorpus-id\tscore\n2\td1\t1\n1\td2\t2\n2\td3\t1\n"
    (tmp_path / "qrels").mkdir()
    (tmp_path / "queries.jsonl").write_text("".join(q if isinstance(q, str) else json.dumps(q) + "\n" for q in queries))
    (tmp_path / "qrels" / f"{split}.tsv").write_text(qrels)
    return tmp_path


def test_scifact_test_split_has_the_judged_queries_only(scifact_dir):
    split = load_split(scifact_dir, "test")
    assert list(split.queries) == list(split.qrels)
    assert len(split) == len(
        {line.split("\t")[0] for line in (scifact_dir / "qrels/test.tsv").read_text().splitlines()[1:]}
    )


def test_scifact_splits_do_not_share_queries(scifact_dir):
    test, train = load_split(scifact_dir, "test"), load_split(scifact_dir, "train")
    assert len(test) and len(train) and not set(test.queries) & set(train.queries)


def test_split_keeps_qrels_order_and_grades(tmp_path):
    split = load_split(_folder(tmp_path), "test")
    assert split.queries == {"2": "two", "1": "one"}
    assert list(split.queries) == ["2", "1"]
    assert split.qrels == {"2": {"d1": 1, "d3": 1}, "1": {"d2": 2}}
    assert (split.dataset, split.split) == (tmp_path.name, "test")


def test_qrels_without_header_are_read(tmp_path):
    path = tmp_path / "q.tsv"
    path.write_text("1\td1\t1\n")
    assert read_qrels(path) == {"1": {"d1": 1}}


def test_a_missing_split_lists_the_available_ones(tmp_path):
    with pytest.raises(CorpusError, match="available splits: test"):
        load_split(_folder(tmp_path), "dev")


def test_a_missing_folder_is_named(tmp_path):
    with pytest.raises(CorpusError, match="nowhere"):
        load_split(tmp_path / "nowhere")


def test_a_missing_queries_file_is_named(tmp_path):
    (_folder(tmp_path) / "queries.jsonl").unlink()
    with pytest.raises(CorpusError, match=r"queries\.jsonl: queries file not found"):
        load_split(tmp_path)


@pytest.mark.parametrize(
    "qrels,problem",
    [
        ("query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\n", r":3: expected 3 tab-separated fields"),
        ("query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\thigh\n", r":3: relevance score 'high' is not an integer"),
        ("query-id\tcorpus-id\tscore\n1\td1\t1\n1\td1\t2\n", r":3: \(1, d1\) judged 1 earlier and 2 here"),
        ("query-id\tcorpus-id\tscore\n", r": no relevance judgements"),
    ],
)
def test_a_bad_qrels_file_names_the_line(tmp_path, qrels, problem):
    with pytest.raises(CorpusError, match=r"test\.tsv" + problem):
        load_split(_folder(tmp_path, qrels=qrels))


@pytest.mark.parametrize(
    "bad_line,problem",
    [
        ("{not json\n", "not valid JSON"),
        ("[1, 2]\n", "expected a JSON object"),
        ('{"_id": "9"}\n', 'needs "_id" and a string "text"'),
        ('{"_id": "1", "text": "again"}\n', "appears twice"),
    ],
)
def test_a_bad_queries_line_names_the_line_even_outside_the_split(tmp_path, bad_line, problem):
    queries = [{"_id": "1", "text": "one"}, {"_id": "2", "text": "two"}, bad_line]
    with pytest.raises(CorpusError, match=rf"queries\.jsonl:3: .*{problem}"):
        load_split(_folder(tmp_path, queries=queries))


def test_a_judged_query_without_text_is_an_error(tmp_path):
    folder = _folder(tmp_path, queries=[{"_id": "1", "text": "one"}])
    with pytest.raises(CorpusError, match="1 queries judged in test.tsv have no text: 2"):
        load_split(folder)


def test_read_queries_keeps_only_wanted_ids(tmp_path):
    _folder(tmp_path)
    assert read_queries(tmp_path / "queries.jsonl", wanted={"3"}) == {"3": "three"}
