"""The training plan that fits a time budget: how many judged pairs, how many steps, and why.

A user's own judgements can be far more than a fixed recipe finishes in (2,590 queries with
~110,000 graded pairs planned 1,748 steps, 7.5 hours on 2 cores). The pipeline measures its own
costs early (an optimiser step on real batches, encoding real documents), then
:func:`plan_training` (pure: numbers in, a plan out) gives training what the budget leaves after
everything already spent and everything still to come (dev figures, saving, embedding the
corpus, tuning, the final evaluation), and says so in words before any of it is spent.

Which pairs, when not all fit (:func:`prioritised_pairs`): the highest grades first, at most
``positives_per_query`` per query (a query judged against fifty documents does not crowd out
forty others), queries in a seeded order so a rerun trains on the same pairs.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from dashrag.errors import ConfigError, ConfigIssue
from dashrag.finetuning.pairs import JudgedPair

SAFETY_MARGIN = 0.05  # of the budget, kept back for what the estimates miss (a slower moment, saving)


@dataclass(frozen=True)
class Costs:
    """What the pipeline measured and estimated, in seconds, when it plans."""

    spent_s: float  # since the pipeline started: reading, mining, the probe
    step_s: float  # one optimiser step on real batches of the chosen size
    after_training_s: Mapping[str, float]  # every later step's estimate, by name


@dataclass(frozen=True)
class TrainingPlan:
    """What training will do and why; recorded whole in the model card."""

    steps: int
    pairs: tuple[JudgedPair, ...]  # the pairs trained on, highest priority first
    judged_pairs: int  # every relevant pair of the fit queries
    capped_pairs: int  # after at most ``positives_per_query`` per query
    recipe_steps: int  # what the recipe (all capped pairs, its epochs) would take
    budget_s: float | None
    estimated_train_s: float
    estimated_total_s: float
    costs: Costs
    reasons: tuple[str, ...]

    def describe(self) -> dict[str, Any]:
        grades = Counter(p.grade for p in self.pairs)
        return {
            "steps": self.steps,
            "pairs_trained": len(self.pairs),
            "queries_trained": len({p.query_id for p in self.pairs}),
            "grades_trained": {str(g): n for g, n in sorted(grades.items(), reverse=True)},
            "judged_pairs": self.judged_pairs,
            "capped_pairs": self.capped_pairs,
            "recipe_steps": self.recipe_steps,
            "budget_s": self.budget_s,
            "measured_step_s": round(self.costs.step_s, 3),
            "spent_before_training_s": round(self.costs.spent_s, 2),
            "estimated_after_training_s": {k: round(v, 2) for k, v in self.costs.after_training_s.items()},
            "estimated_train_s": round(self.estimated_train_s, 2),
            "estimated_total_s": round(self.estimated_total_s, 2),
            "reasons": list(self.reasons),
        }


def prioritised_pairs(pairs: Sequence[JudgedPair], positives_per_query: int, seed: int) -> list[JudgedPair]:
    """The relevant pairs in the order they are taken: grade (highest first), then a pair's place among
    its query's pairs (every query's best pair before any query's second), then a seeded query order;
    at most ``positives_per_query`` per query, a query's highest grades kept."""
    by_query: dict[str, list[JudgedPair]] = defaultdict(list)
    for pair in pairs:
        if pair.grade > 0:
            by_query[pair.query_id].append(pair)
    order = sorted(by_query)
    random.Random(seed).shuffle(order)
    rank_of_query = {q: i for i, q in enumerate(order)}
    kept = [(place, pair) for q in order
            for place, pair in enumerate(sorted(by_query[q], key=lambda p: -p.grade)[:positives_per_query])]
    kept.sort(key=lambda item: (-item[1].grade, item[0], rank_of_query[item[1].query_id]))
    return [pair for _, pair in kept]


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def plan_training(
    pairs: Sequence[JudgedPair],
    *,
    costs: Costs,
    budget_s: float | None,
    batch_size: int,
    epochs: int,
    max_steps: int | None = None,
    positives_per_query: int = 3,
    seed: int = 42,
    margin: float = SAFETY_MARGIN,
) -> TrainingPlan:
    """The steps and pairs that fit ``budget_s`` (None: no time limit) given ``costs``; an error on
    ``--time-budget`` when the budget leaves no step, naming what took it and the budget that would do."""
    ordered = prioritised_pairs(pairs, positives_per_query, seed)
    relevant = sum(1 for p in pairs if p.grade > 0)
    recipe_steps = max(1, math.ceil(len(ordered) * epochs / batch_size))
    after_s = sum(costs.after_training_s.values())
    later = ", ".join(f"{name} {minutes(s)}" for name, s in costs.after_training_s.items())
    reasons = [f"{relevant:,} relevant judged pairs; {len(ordered):,} after at most {positives_per_query} per query "
               f"(highest grades first); the recipe ({epochs} epochs, batch {batch_size}) is {recipe_steps:,} steps"]
    limits = {"the recipe": recipe_steps}
    if max_steps is not None:
        limits["--max-steps"] = max_steps
    if budget_s is not None:
        left_s = budget_s * (1 - margin) - costs.spent_s - after_s
        affordable = math.floor(left_s / costs.step_s) if left_s > 0 else 0
        reasons.append(f"budget {minutes(budget_s)}: {minutes(costs.spent_s)} spent (reading, mining, measuring), "
                       f"{minutes(after_s)} estimated after training ({later}), {margin:.0%} kept back: "
                       f"{minutes(max(left_s, 0))} for training at {costs.step_s:.2f} s/step = {affordable:,} steps")
        if affordable < 1:
            needed = (costs.spent_s + after_s + costs.step_s * min(recipe_steps, 10)) / (1 - margin)
            raise ConfigError([ConfigIssue("--time-budget",
                                           f"{minutes(budget_s)} leaves no time to train: {reasons[-1]}; "
                                           f"give at least {math.ceil(needed / 60)} minutes, or a shorter "
                                           "--max-seq-length (each step and the corpus's embedding cost less)")])
        limits["the time budget"] = affordable
    limit, steps = min(limits.items(), key=lambda item: item[1])
    chosen = ordered[:min(len(ordered), steps * batch_size)]
    grades = Counter(p.grade for p in chosen)
    reasons.append(f"{steps:,} steps ({limit} is the limit) over {len(chosen):,} pairs of "
                   f"{len({p.query_id for p in chosen}):,} queries (grades "
                   + ", ".join(f"{g}: {n:,}" for g, n in sorted(grades.items(), reverse=True))
                   + f"), {steps * batch_size / max(len(chosen), 1):.2f} passes over them")
    train_s = steps * costs.step_s
    return TrainingPlan(steps=steps, pairs=tuple(chosen), judged_pairs=relevant, capped_pairs=len(ordered),
                        recipe_steps=recipe_steps, budget_s=budget_s, estimated_train_s=train_s,
                        estimated_total_s=costs.spent_s + train_s + after_s, costs=costs, reasons=tuple(reasons))


__all__ = ["Costs", "TrainingPlan", "plan_training", "prioritised_pairs"]
