"""Bad input through the CLI: one ``error:`` line, exit 2, nothing written, whatever the input."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from dashrag.core.validation import MAX_COMPONENT_DEPTH, MAX_JSON_DEPTH
from tests.cli.conftest import error_line, invoke
from tests.conftest import EXAMPLE_CORPUS, folder_digest

TFIDF = '{"component": "TFIDFRetriever"}'


def index_refused(tmp_path: Path, config: str, corpus: Path = EXAMPLE_CORPUS, *extra) -> str:
    out = tmp_path / "out"
    line = error_line(invoke("index", config, "--corpus", corpus, "--out", out, *extra))
    assert not out.exists()  # refused before anything was written
    return line


# -- numbers in configs ---------------------------------------------------------------------------
@pytest.mark.parametrize("k1", ["Infinity", "-Infinity", "NaN", "1e400"])
def test_non_finite_numbers_in_a_config_are_refused(tmp_path, k1):
    line = index_refused(tmp_path, f'{{"component": "BM25Retriever", "params": {{"k1": {k1}}}}}')
    assert "params.k1" in line and "is not a finite number" in line


def test_a_non_finite_number_deep_in_a_config_file_is_refused(tmp_path):
    config = tmp_path / "tree.json"
    config.write_text(json.dumps({"component": "ParallelRetriever", "params": {"children": [
        {"component": "BM25Retriever", "params": {"k1": 1.2}},
        {"component": "BM25Retriever", "params": {"b": float("inf")}}]}}))
    line = index_refused(tmp_path, str(config))
    assert "params.children[1].params.b: inf is not a finite number" in line


@pytest.mark.parametrize("value", ["true", '"5"', "5.5", "[5]"])  # 5.0 is 5, as JSON Schema reads it
def test_top_k_must_be_a_json_integer(tmp_path, value):
    line = index_refused(tmp_path, f'{{"component": "TFIDFRetriever", "params": {{"top_k": {value}}}}}')
    assert "params.top_k" in line and "integer" in line


def test_a_number_given_as_a_string_is_refused(tmp_path):
    assert "params.k1" in index_refused(tmp_path, '{"component": "BM25Retriever", "params": {"k1": "1.2"}}')


# -- depth -----------------------------------------------------------------------------------------
def nested_parallel(depth: int) -> dict:
    node: dict = {"component": "TFIDFRetriever", "params": {}}
    for _ in range(depth - 1):
        node = {"component": "ParallelRetriever", "params": {"children": [node]}}
    return node


def test_a_parallel_nested_86_deep_is_refused_at_validation(tmp_path):
    config = tmp_path / "deep.json"
    config.write_text(json.dumps(nested_parallel(86)))
    assert "nested more than" in index_refused(tmp_path, str(config))


def test_the_component_depth_limit_is_checked(tmp_path):
    config = tmp_path / "deep.json"
    config.write_text(json.dumps(nested_parallel(MAX_COMPONENT_DEPTH + 1)))
    line = index_refused(tmp_path, str(config))
    assert f"more than {MAX_COMPONENT_DEPTH} deep" in line or f"more than {MAX_JSON_DEPTH} levels" in line


def test_a_config_nested_2000_deep_is_refused(tmp_path):
    config = tmp_path / "deep.json"
    config.write_text('{"component": "TFIDFRetriever", "params": {"x": ' + "[" * 2000 + "]" * 2000 + "}}")
    line = index_refused(tmp_path, str(config))
    assert "nested" in line


# -- bounded messages ------------------------------------------------------------------------------
def test_a_huge_component_name_is_quoted_in_a_bounded_slice(tmp_path):
    name = "X" * 1_000_000
    line = index_refused(tmp_path, json.dumps({"component": name}))
    assert "unknown component" in line and len(line) < 400 and "1,000,000 characters" in line


def test_a_huge_unknown_key_is_quoted_in_a_bounded_slice(tmp_path):
    line = index_refused(tmp_path, json.dumps({"component": "TFIDFRetriever", "params": {"k" * 100_000: 1}}))
    assert len(line) < 400


# -- corpus lines ---------------------------------------------------------------------------------
@pytest.mark.parametrize("record, message", [
    ({"_id": "d1", "text": None}, "'text' must be a string"),
    ({"_id": None, "text": "a text"}, "'_id' must be"),
    ({"_id": "d1", "text": ["a", "list"]}, "'text' must be a string"),
    ({"_id": True, "text": "a text"}, "'_id' must be"),
    ({"_id": "d1", "text": "a text", "title": {"a": 1}}, "'title' must be a string"),
])
def test_a_bad_corpus_line_is_refused_naming_the_line(tmp_path, record, message):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"_id": "d0", "text": "fine"}) + "\n" + json.dumps(record) + "\n")
    line = index_refused(tmp_path, TFIDF, corpus)
    assert message in line and "corpus.jsonl:2" in line


def test_a_gzipped_corpus_with_a_null_text_is_refused(tmp_path):
    corpus = tmp_path / "corpus.jsonl.gz"
    with gzip.open(corpus, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"_id": "d1", "text": None}) + "\n")
    assert "'text' must be a string" in index_refused(tmp_path, TFIDF, corpus)


def corpus_folder_with_sidecar(tmp_path: Path, sidecar: bytes) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLE_CORPUS, folder)
    (folder / "metadata.jsonl").write_bytes(sidecar)
    return folder


def test_a_metadata_file_that_is_not_utf8_is_refused(tmp_path):
    folder = corpus_folder_with_sidecar(tmp_path, b'{"file": "bm25.md", "categories": {"t": "\xff"}}\n')
    assert "metadata.jsonl: not UTF-8" in index_refused(tmp_path, TFIDF, folder)


def test_categories_given_as_a_list_are_refused(tmp_path):
    folder = corpus_folder_with_sidecar(tmp_path, b'{"file": "bm25.md", "categories": ["a", "b"]}\n')
    assert "'categories' must be an object, not list" in index_refused(tmp_path, TFIDF, folder)


# -- output paths ----------------------------------------------------------------------------------
def test_out_that_is_a_file_is_refused(tmp_path):
    out = tmp_path / "a_file"
    out.write_text("mine")
    line = error_line(invoke("index", TFIDF, "--corpus", EXAMPLE_CORPUS, "--out", out))
    assert "is a file" in line and out.read_text() == "mine"


def test_out_under_a_file_is_refused(tmp_path):
    parent = tmp_path / "a_file"
    parent.write_text("mine")
    line = error_line(invoke("index", TFIDF, "--corpus", EXAMPLE_CORPUS, "--out", parent / "idx"))
    assert "is a file, not a folder" in line and parent.read_text() == "mine"


def test_out_that_cannot_be_created_is_refused():
    out = Path("/proc/self/dashrag-index")  # procfs refuses new folders, even to root
    line = error_line(invoke("index", TFIDF, "--corpus", EXAMPLE_CORPUS, "--out", out))
    assert "--out" in line and "cannot be" in line


def test_a_non_empty_folder_without_a_saved_tree_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    before = folder_digest(out)
    assert "--overwrite" in error_line(invoke("index", TFIDF, "--corpus", EXAMPLE_CORPUS, "--out", out))
    assert folder_digest(out) == before
    result = invoke("index", TFIDF, "--corpus", EXAMPLE_CORPUS, "--out", out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert (out / "notes.txt").read_text() == "my notes" and (out / "dashrag.json").is_file()


def test_reindexing_a_saved_folder_asks_for_overwrite_and_leaves_it_untouched(saved_folder):
    before = folder_digest(saved_folder)
    line = error_line(invoke("index", TFIDF, "--corpus", EXAMPLE_CORPUS, "--out", saved_folder))
    assert line == f"error: --out {saved_folder}: holds a saved tree; pass --overwrite to replace it"
    assert folder_digest(saved_folder) == before


def test_overwrite_replaces_a_saved_tree(saved_folder, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(saved_folder, out)
    result = invoke("index", '{"component": "BM25Retriever"}', "--corpus", EXAMPLE_CORPUS, "--out", out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "dashrag.json").read_text())["config"]["component"] == "BM25Retriever"


def test_a_store_url_whose_driver_is_missing_is_refused_without_showing_the_password(tmp_path):
    line = index_refused(tmp_path, TFIDF, EXAMPLE_CORPUS, "--store", "mysql+mysqldb://user:s3cr3t-pw@127.0.0.1/db")
    assert "driver" in line and "MySQLdb" in line and "s3cr3t-pw" not in line


# -- queries files ---------------------------------------------------------------------------------
def test_a_queries_file_that_is_not_utf8_is_refused(saved_folder, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_bytes(b'{"_id": "q1", "text": "caf\xe9"}\n')
    assert "not UTF-8" in error_line(invoke("query", saved_folder, "--queries", queries))


def test_duplicate_query_ids_are_refused(saved_folder, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "q1", "text": "rank fusion"}\n{"_id": "q1", "text": "chunk overlap"}\n')
    line = error_line(invoke("query", saved_folder, "--queries", queries, "--format", "trec"))
    assert "q.jsonl:2" in line and "repeats line 1" in line


@pytest.mark.parametrize("line_text", ['{"_id": null, "text": "x"}', '{"_id": "q1", "text": ["x"]}', "[1, 2]"])
def test_a_malformed_query_line_is_refused(saved_folder, tmp_path, line_text):
    queries = tmp_path / "q.jsonl"
    queries.write_text(line_text + "\n")
    assert "q.jsonl:1" in error_line(invoke("query", saved_folder, "--queries", queries))


# -- eval outputs, checked before the run -----------------------------------------------------------
@pytest.mark.parametrize("option", ["--json", "--plot"])
def test_eval_output_into_a_missing_folder_is_refused_before_running(tmp_path, scifact_dir, option, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "missing" / "report.out"
    line = error_line(invoke("eval", "tfidf", "--dataset", scifact_dir, option, target))
    assert option in line and "does not exist" in line
    assert not (tmp_path / ".dashrag-work").exists()  # no corpus was read, nothing was built


def test_tune_output_into_a_missing_folder_is_refused_before_running(tmp_path, scifact_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = error_line(invoke("tune", "tfidf", "--dataset", scifact_dir, "--param", "params.top_k=5,10",
                             "--out", tmp_path / "missing" / "tuned.json"))
    assert "--out" in line and not (tmp_path / ".dashrag-work").exists()


# -- usage errors and presets ----------------------------------------------------------------------
@pytest.mark.parametrize("args, fragment", [
    (["index", TFIDF, "--out", "x"], "Missing option '--corpus'"),
    (["query", "x", "q", "--no-such-flag"], "No such option"),
    (["query", "x", "q", "--top-k", "many"], "--top-k"),
    (["no-such-command"], "No such command"),
])
def test_usage_errors_are_one_error_line(args, fragment):
    line = error_line(invoke(*args))
    assert fragment in line


def test_a_usage_error_shows_terminal_escapes_as_text():
    line = error_line(invoke("query", "x", "q", "--bad\x1b]52;c;AAAA\x07"))
    assert "\x1b" not in line and "\\x1b" in line


@pytest.mark.parametrize("name", ["../components/keyword", "keyword/../keyword", "..", "key word"])
def test_a_preset_name_cannot_leave_the_presets_folder(tmp_path, name):
    assert "neither a JSON file nor a preset" in index_refused(tmp_path, name)


# -- symbolic links in folder corpora --------------------------------------------------------------
@pytest.fixture()
def linked_corpus(tmp_path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the launch code is zebra-quartz-42")
    (outside / "sub").mkdir()
    (outside / "sub" / "more.txt").write_text("another private file: walrus-topaz")
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLE_CORPUS, folder)
    (folder / "secret.txt").symlink_to(outside / "secret.txt")
    (folder / "linked_dir").symlink_to(outside / "sub", target_is_directory=True)
    return folder


def test_a_folder_corpus_does_not_follow_symlinks_by_default(linked_corpus, tmp_path):
    out = tmp_path / "idx"
    assert invoke("index", TFIDF, "--corpus", linked_corpus, "--out", out).exit_code == 0
    result = invoke("query", out, "zebra quartz walrus topaz", "--json")
    documents = {hit["document_id"] for hit in json.loads(result.output)["results"]}
    assert documents.isdisjoint({"secret.txt", "linked_dir/more.txt"})


def test_follow_symlinks_opts_in(linked_corpus, tmp_path):
    out = tmp_path / "idx"
    assert invoke("index", TFIDF, "--corpus", linked_corpus, "--out", out, "--follow-symlinks").exit_code == 0
    result = invoke("query", out, "zebra quartz walrus topaz", "--json")
    documents = {hit["document_id"] for hit in json.loads(result.output)["results"]}
    assert {"secret.txt", "linked_dir/more.txt"} <= documents


# -- two `dashrag index` runs on one folder ---------------------------------------------------------
@pytest.mark.slow
def test_two_index_runs_on_one_folder_both_finish_and_leave_one_loadable_save(tmp_path):
    import subprocess
    import sys

    import dashrag

    out = tmp_path / "idx"
    commands = [[sys.executable, "-m", "dashrag.cli.main", "index", json.dumps({"component": "TFIDFRetriever",
                 "params": {"top_k": top_k}}), "--corpus", str(EXAMPLE_CORPUS), "--out", str(out), "--overwrite"]
                for top_k in (3, 4)]  # --overwrite: whichever finishes second replaces the first's tree
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for command in commands]
    results = [(run.wait(timeout=300), run.stderr.read()) for run in runs]
    assert [code for code, _ in results] == [0, 0], results
    loaded = dashrag.load(out)
    assert loaded.to_config()["params"]["top_k"] in (3, 4) and loaded.retrieve("rank fusion")[0]
    assert len(list(out.glob("snapshot-*"))) <= 2
