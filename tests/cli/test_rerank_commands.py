"""``dashrag rerank-candidates`` as a user meets it: candidates in a file or on stdin, the stages and MMR as flags,
JSON out, one ``error:`` line for what is wrong. The stages are the offline cross-encoders of MODELS.md
(tests/fixtures/models.py); what they should answer is computed here with sentence-transformers itself."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dashrag.cli.main import app

from .conftest import error_line

ONNX = json.dumps({"component": "MiniLMOnnxEmbedding", "params": {"max_seq_length": 128}})
QUERY = "how does BM25 weigh term frequency"
TEXTS = ["BM25 saturates term frequency with k1", "dense retrieval embeds queries and passages",
         "reciprocal rank fusion merges ranked lists", "chunking splits long documents into pieces",
         "term frequency and inverse document frequency weigh words", "vector databases index embeddings"]


def request(texts=TEXTS, query=QUERY, scores=None) -> dict:
    return {"query": query, "candidates": [
        {"id": f"d{i}", "text": t, **({} if scores is None else {"score": scores[i]})} for i, t in enumerate(texts)]}


def rerank(*args, stdin: str | None = None):
    return CliRunner().invoke(app, ["rerank-candidates", *map(str, args)], input=stdin)


def model_scores(model_dir, texts=TEXTS, query=QUERY) -> np.ndarray:
    """The cross-encoder's relevance of each text, straight from sentence-transformers (sigmoid of its logit)."""
    from sentence_transformers import CrossEncoder

    return np.asarray(CrossEncoder(str(model_dir), device="cpu").predict([(query, t) for t in texts]))


def by_scores(ids, scores) -> list:
    return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-scores[i], i))]


@pytest.fixture
def candidates_file(tmp_path):
    path = tmp_path / "candidates.json"
    path.write_text(json.dumps(request()))
    return path


def test_stage1_orders_the_candidates_by_the_cross_encoder(candidates_file, cross_encoder_dir):
    result = rerank(candidates_file, "--stage1", cross_encoder_dir, "--top-k", 4)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    expected = model_scores(cross_encoder_dir)
    ids = [f"d{i}" for i in range(len(TEXTS))]
    assert [r["id"] for r in answer["results"]] == by_scores(ids, expected)[:4]
    assert [r["score"] for r in answer["results"]] == pytest.approx(sorted(expected, reverse=True)[:4], abs=1e-5)
    assert {r["scored_by"] for r in answer["results"]} == {"stage1"} and answer["selection"]["path"] == "stage1"


def test_stage2_rescores_only_the_best_stage2_top_n_and_the_rest_follow(candidates_file, cross_encoder_dir,
                                                                          second_cross_encoder_dir):
    result = rerank(candidates_file, "--stage1", cross_encoder_dir, "--stage2", second_cross_encoder_dir,
                    "--stage2-top-n", 3, "--top-k", 6)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)["results"]
    ids = [f"d{i}" for i in range(len(TEXTS))]
    first = by_scores(ids, model_scores(cross_encoder_dir))
    second = model_scores(second_cross_encoder_dir, [TEXTS[ids.index(i)] for i in first[:3]])
    assert [r["id"] for r in answer] == by_scores(first[:3], second) + first[3:]
    assert [r["scored_by"] for r in answer] == ["stage2"] * 3 + ["stage1"] * 3


def test_json_lines_from_stdin_give_one_answer_per_line(cross_encoder_dir):
    lines = [request(), request(TEXTS[:3], query="rank fusion")]
    result = rerank("--stage1", cross_encoder_dir, "--top-k", 2, stdin="".join(json.dumps(r) + "\n" for r in lines))
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(a["query"], len(a["results"])) for a in answers] == [(QUERY, 2), ("rank fusion", 2)]


def test_without_a_stage_the_given_scores_order_and_mmr_with_lambda_1_keeps_it(tmp_path):
    scores = [0.2, 0.9, 0.5, 0.1, 0.7, 0.3]
    path = tmp_path / "scored.json"
    path.write_text(json.dumps(request(scores=scores)))
    result = rerank(path, "--mmr-lambda", 1, "--mmr-embedding", ONNX, "--top-k", 4)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)["results"]
    assert [r["id"] for r in answer] == ["d1", "d4", "d2", "d5"] and [r["score"] for r in answer] == [
        0.9,
        0.7,
        0.5,
        0.3,
    ]


def test_mmr_passes_over_a_near_duplicate_of_what_it_already_picked(tmp_path):
    texts = [
        "BM25 saturates term frequency with k1",
        "BM25 saturates term frequency with k1.",
        "dense retrieval embeds queries and passages",
    ]
    path = tmp_path / "duplicates.json"
    path.write_text(json.dumps(request(texts, scores=[0.9, 0.85, 0.6])))
    plain = json.loads(rerank(path, "--mmr-lambda", 1, "--mmr-embedding", ONNX, "--top-k", 2).stdout)["results"]
    diverse = json.loads(rerank(path, "--mmr-lambda", 0.5, "--mmr-embedding", ONNX, "--top-k", 2).stdout)["results"]
    assert [r["id"] for r in plain] == ["d0", "d1"] and [r["id"] for r in diverse] == ["d0", "d2"]


def test_out_writes_the_answer_to_a_file(tmp_path):
    path, out = tmp_path / "in.json", tmp_path / "answer.json"
    path.write_text(json.dumps(request(scores=[1, 2, 3, 4, 5, 6])))
    result = rerank(path, "--mmr-lambda", 1, "--mmr-embedding", ONNX, "--top-k", 1, "--out", out)
    assert (result.exit_code, result.stdout) == (0, "") and json.loads(out.read_text())["results"][0]["id"] == "d5"


BAD_INPUTS = [
    ("{not json", "malformed JSON at line 1 column 2"),
    (json.dumps({"query": "q", "candidates": [{"id": "a"}]}), "candidates[0].text: Field required"),
    (
        json.dumps({"query": "q", "candidates": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}),
        "candidates[1] repeats the id 'a' of candidates[0]",
    ),
    (
        json.dumps({"query": "q", "candidates": [{"id": "a", "text": "x", "title": "t"}]}),
        "candidates[0].title: Extra inputs are not permitted",
    ),
    ('{"query": "q", "candidates": [{"id": "a", "text": "x", "score": NaN}]}', "NaN is not a JSON number"),
    (json.dumps({"query": "  ", "candidates": []}), "query: the query is empty"),
    (json.dumps({"query": "q", "candidates": [{"id": True, "text": "x"}]}), "candidates[0].id"),
    (json.dumps([{"id": "a", "text": "x"}]), 'expected an object {"query": ..., "candidates": [...]}, got list'),
    (json.dumps(request()) + "\n" + json.dumps({"query": "q"}) + "\n", "line 2: candidates: Field required"),
]


@pytest.mark.parametrize("text, problem", BAD_INPUTS, ids=[p for _, p in BAD_INPUTS])
def test_a_bad_input_is_one_error_line_naming_where_and_what(tmp_path, text, problem):
    path = tmp_path / "bad.json"
    path.write_text(text)
    line = error_line(rerank(path, "--mmr", "--mmr-embedding", ONNX))
    assert problem in line and str(path) in line


def test_a_missing_candidates_file_is_one_error_line(tmp_path):
    assert "no such candidates file" in error_line(rerank(tmp_path / "nowhere.json", "--mmr"))


def test_naming_no_stage_and_no_mmr_is_one_error_line(candidates_file):
    assert "name what reranks: --stage1" in error_line(rerank(candidates_file))


def test_a_stage_model_not_on_this_machine_is_named_with_how_to_get_it(candidates_file):
    line = error_line(rerank(candidates_file, "--stage1", "cross-encoder/ms-marco-MiniLM-L-12-v2"))
    assert "stage1" in line and "ms-marco-MiniLM-L-12-v2" in line and "huggingface-cli download" in line


def test_a_stage_that_cannot_rerank_texts_is_one_error_line(candidates_file):
    line = error_line(rerank(candidates_file, "--stage1", '{"component": "BM25Retriever"}'))
    assert "stage1: BM25Retriever cannot rerank texts" in line


# -- dashrag rerank QUERY: the rag-reranker's local smoke over the built-in demo set ------------------------------

DEMO_QUERY = "what is a cross-encoder?"


def smoke(*args, env=None):
    return CliRunner(env=env).invoke(app, ["rerank", DEMO_QUERY, *map(str, args)])


def result_lines(result) -> list[tuple[float, str]]:
    """(score, id) of each ``#n  score=...  id=...  text`` line."""
    import re

    lines = [line for line in result.stdout.splitlines() if line.startswith("  #")]
    found = [m for m in (re.match(r"  #(\d+)  score=(-?\d+\.\d{4})  id=(\S+)  .+", line) for line in lines) if m]
    assert len(found) == len(lines), result.stdout
    assert [int(m.group(1)) for m in found] == list(range(1, len(found) + 1))
    return [(float(m.group(2)), m.group(3)) for m in found]


def test_rerank_a_query_prints_the_references_header_and_three_results_by_default():
    result = smoke()
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:6] == [f"query:    {DEMO_QUERY!r}", "tenant:   dashrag-local", "backend:  NoopReranker",
                         "mmr:      off", "top_k:    3", "results:  3"]
    assert result_lines(result) == [(1.0, "chunk-0"), (1.0, "chunk-1"), (1.0, "chunk-2")]


def test_rerank_short_flags_set_top_k_and_tenant():
    result = smoke("-k", 2, "-t", "acme", "--no-mmr")
    assert result.exit_code == 0, result.output
    assert "tenant:   acme" in result.stdout and "top_k:    2" in result.stdout and len(result_lines(result)) == 2


def test_rerank_stage_depths_cut_what_goes_on():
    result = smoke("--stage1-top-n", 4, "--stage2-top-n", 2, "-k", 5)
    assert result.exit_code == 0, result.output
    assert [i for _, i in result_lines(result)] == ["chunk-0", "chunk-1"]


def test_rerank_with_mmr_picks_diverse_chunks_with_the_shipped_embedding():
    result = smoke("--mmr", "--mmr-lambda", 0.0, "-k", 4)
    assert result.exit_code == 0, result.output
    assert "mmr:      on (lambda=0.0)" in result.stdout
    ids = [i for _, i in result_lines(result)]
    assert ids[0] == "chunk-0" and len(set(ids)) == 4 and ids != ["chunk-0", "chunk-1", "chunk-2", "chunk-3"]


def test_rerank_with_a_local_cross_encoder_prints_its_scores_best_first(cross_encoder_dir):
    from dashrag.rerank.demo import DEMO_TEXTS

    result = smoke("--backend", "sentence-transformers", "--model", cross_encoder_dir, "-k", 6)
    assert result.exit_code == 0, result.output
    assert "backend:  SentenceTransformersCrossEncoder" in result.stdout
    expected = model_scores(cross_encoder_dir, list(DEMO_TEXTS), DEMO_QUERY)
    assert [i for _, i in result_lines(result)] == by_scores([f"chunk-{i}" for i in range(6)], expected)
    assert [s for s, _ in result_lines(result)] == pytest.approx(sorted(expected, reverse=True), abs=1e-4)


@pytest.mark.parametrize(("backend", "var", "server"), [("cohere", "COHERE_API_KEY", "CohereServer"),
                                                        ("jina", "JINA_API_KEY", "JinaServer")])
def test_rerank_with_a_hosted_backend_reads_its_key_from_the_environment(backend, var, server):
    from tests.retrievers import rerank_services
    from tests.retrievers.rerank_server import word_overlap

    with getattr(rerank_services, server)() as service:
        result = smoke("--backend", backend, "--api-base", service.url, "--model", "m-1", env={var: "k-123"})
    assert result.exit_code == 0, result.output
    assert [(r["headers"]["Authorization"], r["body"]["model"]) for r in service.requests] == [("Bearer k-123", "m-1")]
    assert result_lines(result)[0][0] == pytest.approx(max(word_overlap(DEMO_QUERY, t) for t in service.texts))


def test_rerank_with_a_hosted_backend_and_no_key_is_one_error_line(monkeypatch):
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    assert "COHERE_API_KEY is not set" in error_line(smoke("--backend", "cohere"))


def test_rerank_with_the_default_cross_encoder_absent_says_how_to_provide_it(tmp_path):
    line = error_line(smoke("--backend", "sentence-transformers", env={"HF_HUB_CACHE": str(tmp_path)}))
    assert "'BAAI/bge-reranker-v2-m3' is not on this machine" in line and "huggingface-cli download" in line


def test_rerank_refuses_an_unknown_backend():
    result = smoke("--backend", "bm25")
    assert result.exit_code == 2 and "Traceback" not in result.output and "bm25" in result.output
