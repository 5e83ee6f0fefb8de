"""`dashrag query` over a tree with an LLM stage whose backend fails, as a user meets it.

The tree is an agentic reranker over BM25 on the shipped corpus, indexed by the CLI;
its model is the scripted loopback server (tests/llm/openai_server.py). Every backend
failure (timeout, refused connection, 401, 429, 500, malformed answer) is one
``error:`` line naming the endpoint and the failure, exit 2, no traceback, no key; a
queries file keeps the answers that finished before the failing query.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from dashrag.cli.main import app
from tests.conftest import EXAMPLE_CORPUS, REPO
from tests.llm.openai_server import ScriptedOpenAIServer, http_error, malformed_body, select, slow

runner = CliRunner()
KEY_VAR = "DASHRAG_TEST_CLI_LLM_KEY"
PLANTED = "sk-planted-cli-31f5a0c9e2"
QUERY = "the ranking of documents"
QUERIES = ["the ranking of documents", "the vectors of a model", "fusion of the rankings", "the chunks of a document",
           "the words of a query"]  # common words: each has more BM25 candidates than top_k, so the model is asked
CHUNKER = json.dumps({"component": "TokenChunker", "params": {"chunk_size": 20, "chunk_overlap": 0}})


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def index_agentic(api_base: str, out) -> None:
    tree = {"component": "AgenticRerankerRetriever", "params": {
        "k1": 6, "top_k": 2, "children": [{"component": "BM25Retriever", "params": {}}],
        "llm_model": {"component": "LiteLLMModel", "params": {
            "model": "openai/test-model", "api_base": api_base, "timeout": 2.0,
            "credential": {"component": "EnvCredential", "params": {"var": KEY_VAR}}}}}}
    result = run("index", json.dumps(tree), "--corpus", EXAMPLE_CORPUS, "--out", out, "--chunker", CHUNKER)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def llm_server():
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def indexed(llm_server, tmp_path_factory):
    out = tmp_path_factory.mktemp("llm-cli") / "agentic"
    index_agentic(llm_server.api_base, out)
    return out


@pytest.fixture
def planted_key(monkeypatch):
    monkeypatch.setenv(KEY_VAR, PLANTED)


def assert_one_error_line(result, *expected: str) -> str:
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output
    assert all(text in lines[0] for text in expected), lines[0]
    assert PLANTED not in result.output and PLANTED[-8:] not in result.output
    return lines[0]


FAILURES = {
    "timeout": (slow(4.0), "failed: no answer within 2 s (timeout)"),
    "401": (http_error(401, f"Incorrect API key provided: {PLANTED}"),
            "failed: HTTP 401 Unauthorized: Incorrect API key provided: [REDACTED]"),
    "429": (http_error(429, "Rate limit reached"), "failed: HTTP 429 Too Many Requests: Rate limit reached"),
    "500": (http_error(500, "model crashed"), "failed: HTTP 500 Internal Server Error: model crashed"),
    "malformed": (malformed_body(), "failed: the answer is not a chat completion (not JSON: Expecting value"),
}


@pytest.mark.parametrize("failure", list(FAILURES.values()), ids=list(FAILURES))
def test_backend_failure_is_one_error_line_naming_the_endpoint_and_exit_2(indexed, llm_server, planted_key, failure):
    reply, says = failure
    llm_server.script(reply)
    result = run("query", indexed, QUERY)
    assert_one_error_line(result, f"LLM backend openai/test-model at {llm_server.api_base} {says}")


def test_refused_connection_is_one_error_line_naming_the_endpoint_and_exit_2(tmp_path, planted_key):
    with ScriptedOpenAIServer() as gone:
        index_agentic(gone.api_base, tmp_path / "agentic")
    result = run("query", tmp_path / "agentic", QUERY)  # the server has stopped: nothing listens there
    assert_one_error_line(result, f"LLM backend openai/test-model at {gone.api_base} failed: cannot connect "
                                  "([Errno 111] Connection refused)")


@pytest.fixture
def queries_file(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps({"_id": f"q{i}", "text": q}) + "\n" for i, q in enumerate(QUERIES, 1)))
    return path


@pytest.mark.slow
def test_a_batch_writes_each_answer_as_it_completes_and_names_the_failing_query(indexed, llm_server, queries_file):
    llm_server.script(select(1), slow(1.0, select(2)), http_error(500, "model crashed"))
    before = len(llm_server.requests)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    env.pop(KEY_VAR, None)
    proc = subprocess.Popen([sys.executable, "-m", "dashrag.cli.main", "query", str(indexed), "--queries",
                             str(queries_file), "--format", "json"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        seen = llm_server.requests[before:]
        # the first answer was out while the second query was still with the model (its reply waits 1 s)
        assert first and (len(seen) < 2 or not seen[1].response)
        rest, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    written = [json.loads(line) for line in (first + rest).splitlines()]
    assert proc.returncode == 2
    assert [w["query"] for w in written] == QUERIES[:2] and all(len(w["results"]) == 1 for w in written)
    [line] = err.strip().splitlines()
    assert line == (f"error: query 'q3' (3 of 5) failed; the 2 answers before it were delivered: LLM backend "
                    f"openai/test-model at {llm_server.api_base} failed: HTTP 500 Internal Server Error: model crashed")
    assert len(llm_server.requests) - before == 3  # the queries after the failing one were never asked


def test_a_trec_batch_keeps_the_finished_queries_too(indexed, llm_server, queries_file):
    llm_server.script(select(1), select(2, 1), http_error(429, "Rate limit reached"))
    result = run("query", indexed, "--queries", queries_file, "--format", "trec")
    assert result.exit_code == 2
    *trec, error = result.output.strip().splitlines()
    assert {line.split()[0] for line in trec} == {"q1", "q2"} and all(line.split()[1] == "Q0" for line in trec)
    assert error.startswith("error: query 'q3' (3 of 5) failed") and "HTTP 429 Too Many Requests" in error
