"""Retrieval metrics by name (``ndcg@10``, ``recall@100``, ...), computed by pytrec_eval.

The arithmetic is trec_eval's, through ``pytrec_eval`` (the maintained Python
binding of the reference implementation), so our figures are the ones papers
and leaderboards print. This module only maps names to trec_eval measures,
handles the one measure trec_eval has no cut for (reciprocal rank), and
averages.

Averaging is over *every judged query*: a judged query that the run does not
contain, or for which it returned nothing, scores 0 (trec_eval's ``-c``).
pytrec_eval by itself silently leaves such queries out, which would reward a
retriever for failing on its hardest queries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

import pytrec_eval

from dashrag.errors import ConfigError
from dashrag.evaluation.runs import cut

# our name → trec_eval measure family
_FAMILIES: dict[str, str] = {
    "ndcg": "ndcg_cut",
    "recall": "recall",
    "precision": "P",
    "map": "map_cut",
    "mrr": "recip_rank",
}
KNOWN_METRICS = tuple(f"{name}@k" for name in _FAMILIES)
_METRIC_NAME = re.compile(r"^\s*([a-z]+)@([0-9]+)\s*$")


@dataclass(frozen=True)
class Metric:
    """One metric at one cutoff, e.g. ``Metric("ndcg", 10)`` for nDCG@10."""

    name: str
    cutoff: int

    @property
    def label(self) -> str:
        return f"{self.name}@{self.cutoff}"

    @property
    def truncates_run(self) -> bool:
        """True where trec_eval has no ``@k`` form and the run is cut before scoring."""
        return self.name == "mrr"

    @property
    def trec_measure(self) -> str:
        """The measure string pytrec_eval is asked for (``ndcg_cut.10``)."""
        family = _FAMILIES[self.name]
        return family if self.truncates_run else f"{family}.{self.cutoff}"

    @property
    def result_key(self) -> str:
        """The key pytrec_eval answers under (``ndcg_cut_10``)."""
        family = _FAMILIES[self.name]
        return family if self.truncates_run else f"{family}_{self.cutoff}"


def parse_metric(text: str) -> Metric:
    """``"nDCG@10"`` → ``Metric("ndcg", 10)``; anything else is a :class:`ConfigError`."""
    match = _METRIC_NAME.match(text.lower())
    if not match or match.group(1) not in _FAMILIES:
        raise ConfigError(f"unknown metric {text!r}; known metrics: {', '.join(KNOWN_METRICS)} (k a positive integer)")
    cutoff = int(match.group(2))
    if cutoff < 1:
        raise ConfigError(f"metric {text!r}: the cutoff k must be at least 1")
    return Metric(match.group(1), cutoff)


def parse_metrics(spec: str | Iterable[str]) -> tuple[Metric, ...]:
    """``"ndcg@10,recall@100"`` (or a list of names) → metrics, duplicates dropped, order kept."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    metrics = tuple(dict.fromkeys(parse_metric(name) for name in names if name.strip()))
    if not metrics:
        raise ConfigError(f"no metric given; known metrics: {', '.join(KNOWN_METRICS)}")
    return metrics


@dataclass(frozen=True)
class MetricResult:
    """``per_query[label][query_id]`` and ``mean[label]``; ``n_queries`` is what was averaged over."""

    per_query: Mapping[str, Mapping[str, float]]
    mean: Mapping[str, float]
    n_queries: int


class Evaluator:
    """Scores runs against one set of judgements.

    Building a ``pytrec_eval.RelevanceEvaluator`` parses the qrels, so one
    Evaluator is built per split and reused for every run (every node of a
    tree, every point of a parameter sweep).
    """

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], metrics: str | Iterable[str | Metric]):
        if isinstance(metrics, str):
            self.metrics = parse_metrics(metrics)
        else:
            self.metrics = tuple(dict.fromkeys(m if isinstance(m, Metric) else parse_metric(m) for m in metrics))
        if not self.metrics:
            raise ConfigError(f"no metric given; known metrics: {', '.join(KNOWN_METRICS)}")
        self.qrels = {str(q): {str(d): int(g) for d, g in docs.items()} for q, docs in qrels.items()}
        cut_by_trec = {m.trec_measure for m in self.metrics if not m.truncates_run}
        self._cut_evaluator = pytrec_eval.RelevanceEvaluator(self.qrels, cut_by_trec) if cut_by_trec else None
        self._rank_evaluator = (
            pytrec_eval.RelevanceEvaluator(self.qrels, {"recip_rank"})
            if any(m.truncates_run for m in self.metrics)
            else None
        )

    def evaluate(self, run: Mapping[str, Mapping[str, float]], query_ids: Iterable[str] | None = None) -> MetricResult:
        """Score ``run``; average over ``query_ids`` (default: every judged query).

        Query ids outside the judgements are ignored: there is nothing to score them against.
        """
        judged = list(self.qrels) if query_ids is None else [q for q in dict.fromkeys(query_ids) if q in self.qrels]
        clean = {
            q: {str(d): float(s) for d, s in run[q].items()} for q in judged if q in run and run[q]
        }
        answers: dict[str, dict[str, float]] = {}
        if self._cut_evaluator is not None:
            _merge(answers, self._cut_evaluator.evaluate(clean))
        per_query: dict[str, dict[str, float]] = {}
        for metric in self.metrics:
            if metric.truncates_run:
                assert self._rank_evaluator is not None  # built whenever a metric truncates the run
                scored = self._rank_evaluator.evaluate(cut(clean, metric.cutoff))
            else:
                scored = answers
            per_query[metric.label] = {q: float(scored.get(q, {}).get(metric.result_key, 0.0)) for q in judged}
        mean = {label: (sum(values.values()) / len(judged) if judged else 0.0) for label, values in per_query.items()}
        return MetricResult(per_query=per_query, mean=mean, n_queries=len(judged))


def _merge(into: dict[str, dict[str, float]], answer: Mapping[str, Mapping[str, float]]) -> None:
    for query_id, values in answer.items():
        into.setdefault(query_id, {}).update(values)


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: str | Iterable[str | Metric] = "ndcg@10",
) -> MetricResult:
    """One-shot scoring of one run; use :class:`Evaluator` to score many against the same qrels."""
    return Evaluator(qrels, metrics).evaluate(run)
