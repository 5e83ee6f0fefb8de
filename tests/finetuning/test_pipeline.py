"""``dashrag finetune pipeline`` on a BEIR folder that is not SciFact: train, embed, tune, preset, final figure."""

from __future__ import annotations

import json
import shutil

import pytest

from dashrag.core.config_json import read_config_file
from dashrag.evaluation.beir import load_split
from tests.fixtures.finetuning import TINY, run_cli


@pytest.fixture(scope="module")
def pipeline_run(other_beir, tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline")
    result = run_cli("finetune", "pipeline", "--dataset", other_beir, "--out", root / "mine.json",
                     "--model-dir", root / "model", "--workdir", root / "work", "--final-eval", "test",
                     "--json", root / "report.json", *TINY)
    assert result.exit_code == 0, result.output
    return root, result


def test_the_preset_is_the_tuned_hybrid_naming_the_fine_tuned_model(pipeline_run):
    root, _ = pipeline_run
    preset = read_config_file(root / "mine.json", "preset")
    dense = preset["params"]["children"][1]["params"]["embedding"]
    assert preset["component"] == "ParallelRetriever" and preset["params"]["merge_strategy"] == "relative_score"
    assert dense == {**dense, "component": "SentenceTransformerEmbedding"}
    assert dense["params"]["model"] == str((root / "model").resolve())
    report = json.loads((root / "report.json").read_text())
    best = report["tuning"]["best"]["values"]
    assert preset["params"]["children"][0]["params"]["k1"] == best["params.children[0].params.k1"]
    assert preset["params"]["weights"][0] == best["params.weights[0]"]


def test_the_tree_is_tuned_on_the_dev_slice_and_only_the_final_step_reads_test(pipeline_run, other_beir):
    root, _ = pipeline_run
    report = json.loads((root / "report.json").read_text())
    assert report["tuning"]["split"] == "train-dev"
    assert report["model_card"]["data"]["splits_read"] == ["train"]
    final = report["final"]
    assert final["split"] == "test" and final["n_queries"] == len(load_split(other_beir, "test"))
    assert set(final["per_node"]) == {"root", "root.children[0]", "root.children[1]"}


def test_every_step_is_timed(pipeline_run):
    root, result = pipeline_run
    timings = json.loads((root / "report.json").read_text())["timings"]
    assert set(timings) == {"mine_s", "train_s", "embed_s", "tune_s", "choose_s", "final_s", "total_s"}
    assert timings["total_s"] == pytest.approx(sum(v for k, v in timings.items() if k != "total_s"))
    assert "steps: mine" in result.stdout


def test_dashrag_eval_scores_the_written_preset_as_the_pipeline_did(pipeline_run, other_beir):
    root, _ = pipeline_run
    result = run_cli("eval", root / "mine.json", "--dataset", other_beir, "--chunker", "WholeDocumentChunker",
                     "--workdir", root / "work", "--json", root / "eval.json")
    assert result.exit_code == 0, result.output
    again = json.loads((root / "eval.json").read_text())["metrics"]
    final = json.loads((root / "report.json").read_text())["final"]["metrics"]
    assert again == pytest.approx(final, abs=1e-6)


def test_a_preset_whose_model_folder_is_missing_fails_naming_the_folder_and_the_command(pipeline_run, other_beir,
                                                                                       tmp_path):
    root, _ = pipeline_run
    moved = shutil.copytree(root / "model", tmp_path / "moved")
    shutil.rmtree(root / "model")
    try:
        result = run_cli("eval", root / "mine.json", "--dataset", other_beir, "--chunker", "WholeDocumentChunker")
    finally:
        shutil.move(moved, root / "model")
    assert result.exit_code == 2
    assert "model" in result.stderr and "is not a directory" in result.stderr and "dashrag finetune" in result.stderr
