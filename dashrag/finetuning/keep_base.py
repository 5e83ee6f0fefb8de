"""The keep-the-base rule: learning without judgements must never ship a tree worse than the one it started from.

Pseudo-queries cost nothing and can mislead (a model can learn to match titles and forget meaning),
so a held-out slice of them, never trained on, scores the base tree and the learned tree alike;
the learned one is shipped only when it scores strictly higher, by at least ``min_gain``. A tie
keeps the base: it is the tree the user already trusts, and equal scores are no evidence of gain.
The report carries both scores and the reason in words.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from dashrag.evaluation.beir import EvaluationSplit

BASE = "base"
LEARNED = "learned"
HELD_OUT_METRIC = "ndcg@10"


@dataclass(frozen=True)
class TreeChoice:
    """Which tree ships, the two held-out scores it was chosen on, and why in words."""

    shipped: str  # BASE or LEARNED
    metric: str
    base: float
    learned: float
    min_gain: float
    reason: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def choose_tree(base: float, learned: float, *, min_gain: float = 0.0, metric: str = HELD_OUT_METRIC) -> TreeChoice:
    """Ship the learned tree only when its held-out score beats the base's by more than ``min_gain``."""
    if min_gain < 0:
        raise ValueError(f"min_gain must be >= 0, not {min_gain}")
    gain = learned - base
    if gain > min_gain:
        return TreeChoice(LEARNED, metric, base, learned, min_gain,
                          f"the learned tree scores {learned:.4f} {metric} on the held-out pseudo-queries against "
                          f"the base's {base:.4f} (+{gain:.4f})")
    return TreeChoice(BASE, metric, base, learned, min_gain,
                      f"the learned tree scores {learned:.4f} {metric} on the held-out pseudo-queries, not more than "
                      f"{min_gain:.4f} above the base's {base:.4f}: the base is kept")


def choose_dense_model(dense_alone: dict[str, float]) -> dict[str, str]:
    """Which embedding model the tree keeps (BASE or LEARNED), from each dense model's held-out score alone: the
    learned one only when it scores strictly higher. A hybrid can gain from its tuned BM25 child while its model
    loses, so the model must earn its place on its own, as the tree must; the reason in words. Without a learned
    score (``--no-training``) the base model stays."""
    base, learned = dense_alone["base"], dense_alone.get("learned")
    if learned is None:
        return {"chosen": BASE, "reason": "no model was trained (--no-training): the tree keeps the base model"}
    if learned > base:
        return {"chosen": LEARNED, "reason": f"the learned model alone scores {learned:.4f} on the held-out "
                                             f"pseudo-queries against the base model's {base:.4f}"}
    return {"chosen": BASE, "reason": f"the learned model alone scores {learned:.4f} on the held-out pseudo-queries, "
                                      f"not above the base model's {base:.4f}: the tree keeps the base model, its "
                                      f"fusion weight re-tuned for it"}


def held_out_score(config: dict[str, Any], held_out: EvaluationSplit, infra: Any,
                   metric: str = HELD_OUT_METRIC) -> float:
    """``config``'s tree, built over the stored corpus ``infra``, scored on the held-out pseudo-queries."""
    from dashrag.evaluation.runner import evaluate_tree
    from dashrag.finetuning.negatives import fit_tree

    tree = fit_tree(config, infra)
    try:
        return float(evaluate_tree(tree, held_out, metric, per_node=False)["metrics"][metric])
    finally:
        tree.close()


def compare_on_held_out(base: dict[str, Any], learned: dict[str, Any], held_out: EvaluationSplit, infra: Any,
                        *, min_gain: float = 0.0) -> TreeChoice:
    """Score both trees on the same held-out pseudo-queries over the same stored corpus, and choose."""
    return choose_tree(held_out_score(base, held_out, infra), held_out_score(learned, held_out, infra),
                       min_gain=min_gain)


__all__ = ["BASE", "HELD_OUT_METRIC", "LEARNED", "TreeChoice", "choose_dense_model", "choose_tree",
           "compare_on_held_out", "held_out_score"]
