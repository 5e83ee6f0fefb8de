"""``dashrag eval`` and ``dashrag tune`` end to end on a SciFact subset, checked against pytrec_eval directly."""

from __future__ import annotations

import json

import pytest
import pytrec_eval
from typer.testing import CliRunner

import dashrag
from dashrag.cli.main import app
from dashrag.evaluation.beir import load_split
from tests.conftest import EXAMPLE_CORPUS
from tests.evaluation.test_runner import CHUNKER, HYBRID

runner = CliRunner()
BUILD = ["--chunker", json.dumps(CHUNKER)]


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("work")


@pytest.fixture(scope="module")
def saved_hybrid(scifact_subset, tmp_path_factory):
    out = tmp_path_factory.mktemp("saved") / "hybrid"
    result = run("index", json.dumps(HYBRID), "--corpus", scifact_subset, "--out", out, *BUILD)
    assert result.exit_code == 0, result.output
    return out


def eval_report(tmp_path, *args):
    out = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    result = run("eval", *args, "--json", out)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def trec_run_of(folder, queries_file):
    result = run("query", folder, "--queries", queries_file, "--format", "trec", "--top-k", 100)
    assert result.exit_code == 0, result.output
    run_ = {}
    for line in result.stdout.splitlines():
        query_id, _, document_id, rank, score, _ = line.split()
        run_.setdefault(query_id, {})[document_id] = (float(score), int(rank))
    return run_


@pytest.mark.slow
def test_eval_of_a_saved_tree_equals_pytrec_eval_on_its_trec_run(saved_hybrid, scifact_subset, tmp_path):
    report = eval_report(tmp_path, saved_hybrid, "--dataset", scifact_subset)
    qrels = {q: dict(d) for q, d in load_split(scifact_subset, "test").qrels.items()}
    trec = trec_run_of(saved_hybrid, scifact_subset / "queries.jsonl")
    scores = {q: {d: s for d, (s, _) in trec.get(q, {}).items()} for q in qrels}
    answers = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(
        {q: r for q, r in scores.items() if r}
    )
    ndcg = sum(answers.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels) / len(qrels)
    recall = sum(answers.get(q, {}).get("recall_100", 0.0) for q in qrels) / len(qrels)
    reciprocal = []
    for q in qrels:  # by hand, from the rank column the TREC file prints
        ranks = [rank for d, (_, rank) in trec.get(q, {}).items() if qrels[q].get(d, 0) > 0 and rank <= 10]
        reciprocal.append(1 / min(ranks) if ranks else 0.0)
    assert report["metrics"]["ndcg@10"] == pytest.approx(ndcg, abs=1e-12)
    assert report["metrics"]["recall@100"] == pytest.approx(recall, abs=1e-12)
    assert report["metrics"]["mrr@10"] == pytest.approx(sum(reciprocal) / len(qrels), abs=1e-12)
    assert 0 < ndcg < 1


def test_eval_per_node_figures_equal_each_child_evaluated_alone(scifact_subset, workdir, tmp_path):
    common = ["--dataset", scifact_subset, "--workdir", workdir, *BUILD]
    report = eval_report(tmp_path, json.dumps(HYBRID), *common)
    assert {path: node["component"] for path, node in report["per_node"].items()} == {
        "root": "ParallelRetriever",
        "root.children[0]": "TFIDFRetriever",
        "root.children[1]": "TFIDFRetriever",
    }
    for index, child in enumerate(HYBRID["params"]["children"]):
        alone = eval_report(tmp_path, json.dumps(child), *common)
        assert report["per_node"][f"root.children[{index}]"]["metrics"] == alone["metrics"]


def test_eval_prints_every_node_and_writes_a_plot(scifact_subset, workdir, tmp_path):
    plot = tmp_path / "nodes.png"
    result = run("eval", json.dumps(HYBRID), "--dataset", scifact_subset, "--workdir", workdir, "--plot", plot, *BUILD)
    assert result.exit_code == 0, result.output
    assert "root.children[1]" in result.output and "ndcg@10" in result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tune_writes_the_best_point_of_its_grid_as_a_valid_config(scifact_subset, workdir, tmp_path):
    tuned, report_file, plot = tmp_path / "tuned.json", tmp_path / "tuning.json", tmp_path / "tuning.png"
    result = run(
        "tune",
        json.dumps(HYBRID),
        "--dataset",
        scifact_subset,
        "--workdir",
        workdir,
        *BUILD,
        "--param",
        "params.rrf_k=1,60",
        "--param",
        "params.children[0].params.sublinear_tf=false,true",
        "--out",
        tuned,
        "--json",
        report_file,
        "--plot",
        plot,
    )
    assert result.exit_code == 0, result.output
    report = json.loads(report_file.read_text())
    config = json.loads(tuned.read_text())
    assert dashrag.validate_and_transform(config) == config == report["best"]["config"]
    assert report["best"]["train"]["ndcg@10"] == max(p["train"]["ndcg@10"] for p in report["points"])
    assert len(report["points"]) == 4 and report["test"]["split"] == "test"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("params.children[0].params.k9=1,2", "params.children[0].params.k9: no parameter 'k9'"),
        ("params.rrf_k=60,-3", "params.rrf_k: value -3 is refused"),
        ("params.rrf_k", "expected PATH=v1,v2"),
        ("params.children[0]..top_k=1", "not a JSON path"),
    ],
)
def test_a_bad_param_is_one_line_exit_2_before_any_work(spec, message, scifact_subset, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("tune", json.dumps(HYBRID), "--dataset", scifact_subset, "--param", spec)
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and message in result.output
    assert list(tmp_path.iterdir()) == []  # no work folder, no tuned.json


def test_eval_refuses_a_folder_saved_on_another_corpus(scifact_subset, tmp_path):
    folder = tmp_path / "example"
    assert run("index", '{"component": "TFIDFRetriever"}', "--corpus", EXAMPLE_CORPUS, "--out", folder).exit_code == 0
    result = run("eval", folder, "--dataset", scifact_subset)
    assert result.exit_code == 2 and "another corpus" in result.output


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--metrics", "ndcg@10,bleu@4"], "unknown metric 'bleu@4'"),
        (["--split", "dev"], "available splits: test, train"),
    ],
)
def test_eval_bad_input_is_one_line_exit_2(extra, message, saved_hybrid, scifact_subset):
    result = run("eval", saved_hybrid, "--dataset", scifact_subset, *extra)
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and message in result.output


def test_eval_refuses_a_chunker_for_a_saved_folder(saved_hybrid, scifact_subset):
    result = run("eval", saved_hybrid, "--dataset", scifact_subset, *BUILD)
    assert result.exit_code == 2 and "--chunker" in result.output
