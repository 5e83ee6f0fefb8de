"""``dashrag finetune pipeline`` on a BEIR folder that is not SciFact: train, embed, tune, preset, final figure;
with ``--time-budget`` / ``--max-steps`` as a user runs it: the plan before the time, kept.

Every test of a run's result reads one run, capped (a 20-minute budget, at most 2 steps) and scored on test at the
end: it was two runs, one capped (the former test_pipeline_budget.py) and one not, which trained the same tiny
recipe on the same folder (docs/testing.md, "Merged or removed tests").
"""

from __future__ import annotations

import json
import shutil

import pytest

from dashrag.core.config_json import read_config_file
from dashrag.evaluation.beir import load_split
from dashrag.finetuning.model_card import read_card
from tests.fixtures.finetuning import TINY, run_cli

pytestmark = pytest.mark.slow  # every test trains, or measures training steps of, a real model


@pytest.fixture(scope="module")
def pipeline_run(other_beir, tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline")
    result = run_cli("finetune", "pipeline", "--dataset", other_beir, "--out", root / "mine.json",
                     "--model-dir", root / "model", "--workdir", root / "work", "--final-eval", "test",
                     "--json", root / "report.json", "--time-budget", "20", "--max-steps", "2", *TINY)
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


def test_the_plan_is_said_before_training_with_its_limit(pipeline_run):
    _, result = pipeline_run
    out = result.stdout
    assert "plan: " in out and out.index("plan: ") < out.index("trained 2 steps")
    assert "budget 20.0 min" in out and "s/step" in out and "--max-steps is the limit" in out


def test_the_model_card_records_the_choice_and_training_keeps_it(pipeline_run):
    root, _ = pipeline_run
    card = read_card(root / "model")
    plan = card["plan"]
    assert plan["steps"] == 2 == card["figures"]["train_steps"]
    assert plan["budget_s"] == 20 * 60 and plan["measured_step_s"] > 0
    # every step after training is estimated, the final figure too since the run asks for it (--final-eval)
    assert set(plan["estimated_after_training_s"]) == {"dev figures", "embed", "tune", "final"}
    assert plan["pairs_trained"] == min(plan["capped_pairs"], 2 * 8)
    assert plan["grades_trained"] == {"2": plan["pairs_trained"]}  # the folder's judgements are all grade 2


def test_the_whole_run_is_timed_against_the_budget(pipeline_run):
    root, result = pipeline_run
    budget = json.loads((root / "report.json").read_text())["budget"]
    assert budget["budget_s"] == 20 * 60 and 0 < budget["wall_s"] <= budget["budget_s"]
    assert "min of the 20.0 min budget" in result.stdout


def test_a_budget_too_small_to_train_is_refused_before_training(other_beir, tmp_path):
    result = run_cli("finetune", "pipeline", "--dataset", other_beir, "--out", tmp_path / "mine.json",
                     "--model-dir", tmp_path / "model", "--workdir", tmp_path / "work", "--time-budget", "0.02",
                     *TINY)
    assert result.exit_code == 2
    assert "error:" in result.output and "--time-budget" in result.output and "give at least" in result.output
    assert not (tmp_path / "model").exists() and not (tmp_path / "mine.json").exists()


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
