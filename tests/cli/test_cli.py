"""The CLI end to end: real commands on the shipped corpus, one-line errors for bad input."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from dashrag.cli.main import app
from tests.conftest import EXAMPLE_CORPUS

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_components_lists_kind_and_description():
    result = run("components")
    assert result.exit_code == 0
    assert "TFIDFRetriever" in result.output and "retriever" in result.output


def test_schema_prints_one_json_schema():
    result = run("schema", "TFIDFRetriever")
    assert json.loads(result.output)["x-component"] == "TFIDFRetriever"


def test_query_prints_ranked_chunks(saved_folder):
    result = run("query", saved_folder, "dense vectors cosine similarity", "--json")
    payload = json.loads(result.output)
    assert payload["results"][0]["document_id"] == "dense_retrieval.md"


def test_query_trace_shows_the_tree(saved_folder):
    result = run("query", saved_folder, "stemming stop words", "--trace", "--json")
    assert json.loads(result.output)["trace"]["component"] == "TFIDFRetriever"


def test_queries_file_gives_a_document_level_trec_run(saved_folder, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "q1", "text": "rank fusion"}\n{"_id": "q2", "text": "chunk overlap"}\n')
    result = run("query", saved_folder, "--queries", queries, "--format", "trec")
    lines = [line.split() for line in result.output.splitlines()]
    assert {line[0] for line in lines} == {"q1", "q2"}
    assert all(line[1] == "Q0" and line[5] == "dashrag" for line in lines)
    q1 = [line for line in lines if line[0] == "q1"]
    assert [int(line[3]) for line in q1] == list(range(1, len(q1) + 1))
    assert len({line[2] for line in q1}) == len(q1)  # one line per document
    assert q1[0][2] == "hybrid_search.md"


def test_index_records_the_retriever_in_the_store(saved_folder):
    from dashrag.store.store import Store, sqlite_url

    store_file = next(saved_folder.glob("store-*.sqlite"))
    assert Store(sqlite_url(store_file)).retriever_records()[0].folder == str(saved_folder.resolve())


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["index", '{"component": "TFIDFRetreiver"}', "--corpus", EXAMPLE_CORPUS, "--out", "x"],
            "did you mean 'TFIDFRetriever'",
        ),
        (
            [
                "index",
                '{"component": "TFIDFRetriever", "params": {"top_k": -2}}',
                "--corpus",
                EXAMPLE_CORPUS,
                "--out",
                "x",
            ],
            "params.top_k",
        ),
        (
            [
                "index",
                '{"component": "ParallelRetriever", "params": {"children": [{"component": "TFIDFRetriever"}, '
                '{"component": "TFIDFRetriever", '
                '"params": {"vectorizer": {"component": "BagOfWordsConverter", "params": {"ngram_max": "x"}}}}]}}',
                "--corpus",
                EXAMPLE_CORPUS,
                "--out",
                "x",
            ],
            "params.children[1].params.vectorizer.params.ngram_max: Input should be a valid integer",
        ),
        (["index", '{"component": ', "--corpus", EXAMPLE_CORPUS, "--out", "x"], "malformed JSON"),
        (["index", "tfidf", "--corpus", "/no/such/corpus", "--out", "x"], "no such file or folder"),
        (["query", "/no/such/folder", "text"], "no such saved retriever folder"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_empty_query_is_refused(saved_folder):
    result = run("query", saved_folder, "   ")
    assert result.exit_code == 2 and "the query is empty" in result.output


def test_empty_corpus_is_refused(tmp_path):
    (tmp_path / "corpus").mkdir()
    result = run("index", "tfidf", "--corpus", tmp_path / "corpus", "--out", tmp_path / "o")
    assert result.exit_code == 2 and "empty" in result.output


def test_real_process_prints_no_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "dashrag.cli.main", "query", str(tmp_path / "none"), "q"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error:") and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
