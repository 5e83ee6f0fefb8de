"""The training planner: given the measured costs, the judged pairs and a budget, the steps and pairs that fit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.errors import ConfigError
from dashrag.finetuning.budget import Costs, plan_training, prioritised_pairs
from dashrag.finetuning.pairs import JudgedPair


def graded(query_count: int, per_query: int, grades: tuple[int, ...] = (2, 1, 1, 0)) -> list[JudgedPair]:
    return [JudgedPair(f"q{q}", "", f"d{q}-{i}", "", grades[i % len(grades)])
            for q in range(query_count) for i in range(per_query)]


COSTS = Costs(spent_s=60.0, step_s=10.0, after_training_s={"embed": 200.0, "tune": 40.0})


@pytest.mark.slow
def test_the_budget_is_the_limit_when_the_recipe_does_not_fit():
    plan = plan_training(graded(2590, 42), costs=COSTS, budget_s=1800, batch_size=32, epochs=2)
    left = 1800 * 0.95 - 60 - 240
    assert plan.steps == math.floor(left / 10)
    assert len(plan.pairs) == plan.steps * 32
    assert plan.estimated_total_s <= 1800 * 0.95
    assert "the time budget is the limit" in plan.reasons[-1]


def test_the_recipe_is_the_limit_when_it_fits():
    pairs = graded(50, 2)  # grades 2 and 1: 100 relevant pairs
    plan = plan_training(pairs, costs=COSTS, budget_s=1800, batch_size=32, epochs=2)
    assert plan.steps == math.ceil(100 * 2 / 32) and len(plan.pairs) == 100
    assert "the recipe is the limit" in plan.reasons[-1]


def test_max_steps_caps_the_plan():
    plan = plan_training(graded(500, 4), costs=COSTS, budget_s=None, batch_size=16, epochs=1, max_steps=7)
    assert plan.steps == 7 and len(plan.pairs) == 7 * 16
    assert "--max-steps is the limit" in plan.reasons[-1]


def test_no_budget_trains_the_recipe_whole():
    plan = plan_training(graded(300, 3), costs=COSTS, budget_s=None, batch_size=32, epochs=2)
    assert plan.steps == math.ceil(900 * 2 / 32) and plan.capped_pairs == 900


def test_grade_zero_judgements_are_never_positives():
    plan = plan_training(graded(10, 8), costs=COSTS, budget_s=None, batch_size=4, epochs=1, positives_per_query=8)
    assert plan.judged_pairs == 10 * 6 and all(p.grade > 0 for p in plan.pairs)


def test_the_highest_grades_are_taken_first_and_every_query_before_its_second_pair():
    pairs = graded(200, 6)  # per query grades 2,1,1,0,2,1: two grade-2 pairs, three grade-1
    plan = plan_training(pairs, costs=COSTS, budget_s=COSTS.spent_s + 240 + 30 * 10 + 100, batch_size=10, epochs=1)
    chosen = plan.pairs
    assert 200 < len(chosen) < 400
    assert all(p.grade == 2 for p in chosen)  # 400 grade-2 pairs outrank every grade-1 pair
    assert len({p.query_id for p in chosen}) == 200  # each query's first grade-2 pair before any query's second


def test_at_most_positives_per_query_are_kept_the_highest_graded():
    ordered = prioritised_pairs(graded(30, 6), positives_per_query=2, seed=1)
    per_query: dict[str, list[int]] = {}
    for pair in ordered:
        per_query.setdefault(pair.query_id, []).append(pair.grade)
    assert all(grades == [2, 2] for grades in per_query.values()) and len(per_query) == 30


def test_the_choice_is_seeded():
    pairs = graded(400, 3)
    first = plan_training(pairs, costs=COSTS, budget_s=900, batch_size=8, epochs=1, seed=5)
    again = plan_training(pairs, costs=COSTS, budget_s=900, batch_size=8, epochs=1, seed=5)
    other = plan_training(pairs, costs=COSTS, budget_s=900, batch_size=8, epochs=1, seed=6)
    assert first.pairs == again.pairs and first.pairs != other.pairs


def test_a_budget_that_leaves_no_step_is_an_error_naming_the_option_and_a_budget_that_would_do():
    with pytest.raises(ConfigError) as raised:
        plan_training(graded(100, 2), costs=COSTS, budget_s=300, batch_size=32, epochs=2)
    message = str(raised.value)
    assert "--time-budget" in message and "leaves no time to train" in message and "give at least" in message


def test_the_plan_says_what_was_measured_and_estimated():
    plan = plan_training(graded(2590, 42), costs=COSTS, budget_s=1800, batch_size=32, epochs=2)
    described = plan.describe()
    assert described["measured_step_s"] == 10.0 and described["estimated_after_training_s"] == {"embed": 200.0,
                                                                                                 "tune": 40.0}
    assert described["grades_trained"] == {"2": plan.steps * 32} and "10.00 s/step" in plan.reasons[1]


@settings(max_examples=60, deadline=None)
@given(queries=st.integers(1, 60), per_query=st.integers(1, 6), step_s=st.floats(0.01, 30),
       budget_s=st.floats(400, 20000), batch=st.integers(2, 64), epochs=st.integers(1, 3),
       max_steps=st.none() | st.integers(1, 500))
def test_a_plan_never_exceeds_its_budget_its_recipe_or_its_step_cap(queries, per_query, step_s, budget_s, batch,
                                                                    epochs, max_steps):
    pairs = graded(queries, per_query, grades=(2, 1))
    costs = Costs(spent_s=60.0, step_s=step_s, after_training_s={"embed": 300.0})
    try:
        plan = plan_training(pairs, costs=costs, budget_s=budget_s, batch_size=batch, epochs=epochs,
                             max_steps=max_steps)
    except ConfigError:
        assert (budget_s * 0.95 - 360) / step_s < 1
        return
    assert plan.estimated_total_s <= budget_s * 0.95 + 1e-6
    assert plan.steps <= plan.recipe_steps and (max_steps is None or plan.steps <= max_steps)
    assert len(plan.pairs) == min(plan.capped_pairs, plan.steps * batch)
