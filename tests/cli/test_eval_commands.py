"""``dashrag.cli.eval_commands`` driven alone: ``eval`` scores a tree on a judged split, ``tune`` checks its
grid before any work."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dashrag.cli import eval_commands

TFIDF = '{"component": "TFIDFRetriever"}'


def test_eval_alone_writes_a_report_with_the_asked_metric(scifact_subset, tmp_path):
    report = tmp_path / "report.json"
    result = CliRunner().invoke(eval_commands.app, ["eval", TFIDF, "--dataset", str(scifact_subset), "--metrics",
                                                    "ndcg@10", "--workdir", str(tmp_path / "work"),
                                                    "--json", str(report)])
    assert result.exit_code == 0, result.output
    figure = json.loads(report.read_text())["metrics"]["ndcg@10"]
    assert 0.0 < figure <= 1.0


def test_tune_alone_refuses_a_path_the_config_lacks_before_reading_the_corpus(scifact_subset, tmp_path):
    result = CliRunner().invoke(eval_commands.app, ["tune", TFIDF, "--dataset", str(scifact_subset), "--param",
                                                    "params.no_such=1,2", "--out", str(tmp_path / "t.json")])
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and "no_such" in result.stderr
    assert not (tmp_path / "t.json").exists()
