"""The engine features as a user meets them on the command line: `dashrag pg`, `index`/`query` on Qdrant and
PostgreSQL, `--store postgresql+psycopg://...`, `--overwrite`, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from dashrag.cli.main import app
from dashrag.engines.local_postgres import free_port
from tests.conftest import EXAMPLE_CORPUS
from tests.fixtures.qdrant import foreign_edge_collection

runner = CliRunner()
ONNX = {"component": "MiniLMOnnxEmbedding", "params": {"max_seq_length": 128}}


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def dense(index: dict) -> str:
    return json.dumps({"component": "DenseEmbeddingRetriever", "params": {"embedding": ONNX, "index": index}})


def sql(url: str, statement: str, autocommit: bool = False):
    engine = create_engine(url, isolation_level="AUTOCOMMIT" if autocommit else None)
    try:
        with engine.begin() as connection:
            result = connection.execute(text(statement))
            return result.all() if result.returns_rows else None
    finally:
        engine.dispose()


@pytest.mark.slow
def test_pg_start_prints_a_loopback_url_and_stop_stops_it():
    root = Path(tempfile.mkdtemp(prefix="dashrag-cli-pg-"))
    root.chmod(0o755)
    try:
        started = run("pg", "start", "--data", root / "data")
        assert started.exit_code == 0, started.output
        url = started.output.strip()
        assert url.startswith("postgresql+psycopg://postgres@127.0.0.1:")
        assert sql(url, "SHOW listen_addresses") == [("127.0.0.1",)]
        assert sql(url, "SELECT extname FROM pg_extension WHERE extname = 'vector'") == [("vector",)]
        assert run("pg", "status", "--data", root / "data").output.strip() == url
        stopped = run("pg", "stop", "--data", root / "data")
        assert stopped.exit_code == 0 and "stopped" in stopped.output
        assert run("pg", "status", "--data", root / "data").exit_code == 1
    finally:
        run("pg", "stop", "--data", root / "data")
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as another user only when dashrag runs as root")
def test_pg_start_refuses_a_folder_the_server_user_cannot_enter(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    result = run("pg", "start", "--data", private / "data")
    assert result.exit_code == 2 and "not enterable by the server's user" in result.output


def test_index_and_query_on_embedded_qdrant(tmp_path):
    out = tmp_path / "qdrant-tree"
    built = run("index", dense({"component": "QdrantVectorIndex", "params": {"exact": True}}),
                "--corpus", EXAMPLE_CORPUS, "--out", out)
    assert built.exit_code == 0, built.output
    assert (out / "qdrant").is_dir()  # the embedded collection travels with the saved tree
    answer = run("query", out, "what is BM25", "--json")
    assert answer.exit_code == 0, answer.output
    assert json.loads(answer.output.splitlines()[0])["results"]


def test_index_on_an_unreachable_postgresql_exits_2_naming_engine_and_table(tmp_path):
    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/postgres"
    result = run("index", dense({"component": "PgVectorIndex", "params": {"url": url, "table": "docs"}}),
                 "--corpus", EXAMPLE_CORPUS, "--out", tmp_path / "t")
    assert result.exit_code == 2
    assert "PostgreSQL table 'docs'" in result.output and "Traceback" not in result.output


def test_index_over_a_foreign_table_exits_2_and_overwrite_replaces_it(pg_url, tmp_path):
    sql(pg_url, "CREATE TABLE IF NOT EXISTS cli_foreign (id int)")
    config = dense({"component": "PgVectorIndex", "params": {"url": pg_url, "table": "cli_foreign"}})
    refused = run("index", config, "--corpus", EXAMPLE_CORPUS, "--out", tmp_path / "a")
    assert refused.exit_code == 2 and "--overwrite" in refused.output
    assert sql(pg_url, "SELECT count(*) FROM cli_foreign") == [(0,)]
    replaced = run("index", config, "--corpus", EXAMPLE_CORPUS, "--out", tmp_path / "b", "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    answer = run("query", tmp_path / "b", "chunk overlap", "--json")
    assert answer.exit_code == 0 and json.loads(answer.output)["results"]


def test_the_document_store_on_postgresql_serves_index_and_query(pg_url, tmp_path):
    sql(pg_url, "DROP DATABASE IF EXISTS cli_store", autocommit=True)
    sql(pg_url, "CREATE DATABASE cli_store", autocommit=True)
    store = pg_url.rsplit("/", 1)[0] + "/cli_store"
    out = tmp_path / "tfidf"
    built = run("index", '{"component": "TFIDFRetriever"}', "--corpus", EXAMPLE_CORPUS, "--out", out,
                "--store", store)
    assert built.exit_code == 0, built.output
    assert not list(out.glob("store-*.sqlite"))  # the chunks live in PostgreSQL, not beside the tree
    assert sql(store, "SELECT count(*) FROM documents")[0][0] == len(list(EXAMPLE_CORPUS.iterdir()))
    answer = run("query", out, "cosine similarity of dense vectors", "--json", "--store", store)
    assert answer.exit_code == 0, answer.output
    assert json.loads(answer.output)["results"]


def keyword(index: dict) -> str:
    return json.dumps({"component": "BM25Retriever", "params": {"index": index}})


def test_index_and_query_bm25_on_postgresql(pg_url, tmp_path):
    config = keyword({"component": "PgKeywordIndex", "params": {"url": pg_url, "table": "cli_words"}})
    built = run("index", config, "--corpus", EXAMPLE_CORPUS, "--out", tmp_path / "t", "--overwrite")
    assert built.exit_code == 0, built.output
    answer = run("query", tmp_path / "t", "chunk overlap", "--json")
    assert answer.exit_code == 0 and json.loads(answer.output)["results"]


def test_query_on_a_table_edited_behind_the_trees_back_exits_2(pg_url, tmp_path):
    config = keyword({"component": "PgKeywordIndex", "params": {"url": pg_url, "table": "cli_edited"}})
    assert run("index", config, "--corpus", EXAMPLE_CORPUS, "--out", tmp_path / "t", "--overwrite").exit_code == 0
    sql(pg_url, "UPDATE cli_edited_terms SET weight = 0 WHERE term_id = 1")
    answer = run("query", tmp_path / "t", "chunk overlap")
    assert answer.exit_code == 2 and "Traceback" not in answer.output
    assert "PostgreSQL table 'cli_edited'" in answer.output and "modified" in answer.output


def test_index_with_a_refused_qdrant_key_exits_2_without_showing_the_key(refusing_qdrant, tmp_path, monkeypatch):
    monkeypatch.setenv("DASHRAG_TEST_CLI_KEY", "s3cret-cli-key")
    config = keyword({"component": "QdrantKeywordIndex", "params": {
        "url": refusing_qdrant, "collection": "words",
        "api_key": {"component": "EnvCredential", "params": {"var": "DASHRAG_TEST_CLI_KEY"}}}})
    result = run("index", config, "--corpus", EXAMPLE_CORPUS, "--out", tmp_path / "t")
    assert result.exit_code == 2 and "Qdrant collection 'words'" in result.output
    assert "refused the API key" in result.output and "s3cret-cli-key" not in result.output


def test_query_on_a_collection_of_another_dimension_exits_2(tmp_path):
    out = tmp_path / "t"
    config = dense({"component": "QdrantVectorIndex", "params": {"collection": "swapped"}})
    assert run("index", config, "--corpus", EXAMPLE_CORPUS, "--out", out).exit_code == 0
    shutil.rmtree(out / "qdrant" / "edge" / "swapped" / "shard")  # re-created behind the tree's back
    foreign_edge_collection(out / "qdrant", "swapped", size=8)
    answer = run("query", out, "what is BM25")
    assert answer.exit_code == 2 and "Qdrant collection 'swapped'" in answer.output
    assert "8-dimensional" in answer.output and "Traceback" not in answer.output


@pytest.mark.slow
def test_serve_of_an_unreachable_qdrant_exits_2_naming_it(tmp_path):
    """A real process: `serve` sets up the process's logging, which must not outlive it into other tests."""
    url = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "serve", "--qdrant", url,
                           "--qdrant-embedding", json.dumps(ONNX), "--port", "0"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and f"Qdrant server at {url}" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_serve_of_an_edge_folder_as_qdrant_exits_2_pointing_to_the_trees(tmp_path):
    foreign_edge_collection(tmp_path / "qdrant", "docs")
    proc = subprocess.run([sys.executable, "-m", "dashrag.cli.main", "serve", "--qdrant", str(tmp_path / "qdrant"),
                           "--qdrant-embedding", json.dumps(ONNX), "--port", "0"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "holds Qdrant Edge collections" in proc.stderr and "--trees" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "qdrant" / "meta.json").exists()
