"""``dashrag finetune pipeline --time-budget / --max-steps`` as a user runs it: the plan before the time, kept."""

from __future__ import annotations

import json

import pytest

from dashrag.finetuning.model_card import read_card
from tests.fixtures.finetuning import TINY, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def capped_run(other_beir, tmp_path_factory):
    root = tmp_path_factory.mktemp("budget")
    result = run_cli("finetune", "pipeline", "--dataset", other_beir, "--out", root / "mine.json",
                     "--model-dir", root / "model", "--workdir", root / "work", "--json", root / "report.json",
                     "--time-budget", "20", "--max-steps", "2", *TINY)
    assert result.exit_code == 0, result.output
    return root, result


def test_the_plan_is_said_before_training_with_its_limit(capped_run):
    _, result = capped_run
    out = result.stdout
    assert "plan: " in out and out.index("plan: ") < out.index("trained 2 steps")
    assert "budget 20.0 min" in out and "s/step" in out and "--max-steps is the limit" in out


def test_the_model_card_records_the_choice_and_training_keeps_it(capped_run):
    root, _ = capped_run
    card = read_card(root / "model")
    plan = card["plan"]
    assert plan["steps"] == 2 == card["figures"]["train_steps"]
    assert plan["budget_s"] == 20 * 60 and plan["measured_step_s"] > 0
    assert set(plan["estimated_after_training_s"]) == {"dev figures", "embed", "tune"}
    assert plan["pairs_trained"] == min(plan["capped_pairs"], 2 * 8)
    assert plan["grades_trained"] == {"2": plan["pairs_trained"]}  # the folder's judgements are all grade 2


def test_the_whole_run_is_timed_against_the_budget(capped_run):
    root, result = capped_run
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
