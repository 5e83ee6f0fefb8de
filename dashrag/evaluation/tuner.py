"""Grid search over parameters named by their JSON path in a tree: the engine under ``dashrag tune``.

A tuned parameter is ``PATH=v1,v2,...``, PATH a JSON path into the *normalised*
tree (every default filled in), e.g. ``params.children[0].params.k1`` or
``params.weights[1]``. Every path and every value is checked before any work:
a path that does not exist, names a component or a list rather than one
parameter, or a value (or a combination of values) the tree refuses, is one
:class:`ConfigError` naming it.

The search scores every point of the cartesian product on the train split and
picks the best by one metric (ties: the first point in grid order); the best
and the untuned tree are then scored on the test split, so the figure reported
was never seen by the search.

**Efficiency.** The corpus is chunked and stored once (one :class:`Infra` for
every tree). Trees are assembled by :class:`SubtreeCache`, which keys each
fitted retriever subtree by its JSON config: a subtree whose config the grid
does not change is *the same fitted object* in every tree, so only the leaves a
point changes are refitted (BM25's ``k1`` refits that leaf alone; fusion
weights, ``rrf_k`` or an MMR lambda refit nothing). A cached subtree that a
later point reuses also remembers its answers per batch of queries, from its
first point to its last (:class:`Reuse`), so a point that changes only
query-time parameters of a parent re-runs the parent, not its children: a
fusion-weight grid costs one retrieval per child, then fusions only. No root's
answers are kept: a root is used by one point.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from dashrag.core.collection import young_garbage_only
from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_component
from dashrag.core.infra import Infra
from dashrag.core.restriction import Restriction
from dashrag.core.retriever import Retriever
from dashrag.core.validation import join_path, validate_and_transform
from dashrag.errors import ConfigError, ConfigIssue, RuleIssue
from dashrag.evaluation.beir import EvaluationSplit
from dashrag.evaluation.metrics import Evaluator, parse_metric, parse_metrics
from dashrag.evaluation.runner import DEFAULT_TOP_K, evaluate_tree, root_run, run_queries, top_k_hint

Key = str | int
_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[[0-9]+\])*)")
_SCALARS = (str, int, float, bool, type(None))
MAX_COMBINATIONS_SHOWN = 3  # refused combinations listed in an error; the rest are counted


@dataclass(frozen=True)
class TunedParam:
    """One ``--param``: its path as written, the path as keys, and the values to try."""

    path: str
    keys: tuple[Key, ...]
    values: tuple[Any, ...]


def parse_path(path: str) -> tuple[Key, ...]:
    """``params.children[0].params.k1`` → ``("params", "children", 0, "params", "k1")``."""
    keys: list[Key] = []
    for part in path.strip().split("."):
        match = _SEGMENT.fullmatch(part)
        if match is None:
            raise ConfigError([ConfigIssue(path, "not a JSON path like params.children[0].params.k1")])
        keys.append(match.group(1))
        keys.extend(int(index) for index in re.findall(r"[0-9]+", match.group(2)))
    if keys[0] != "params":
        raise ConfigError([ConfigIssue(path, "a tuned path starts at the root's params (params....)")])
    return tuple(keys)


def parse_value(text: str) -> Any:
    """A value as JSON (``1.2``, ``true``, ``null``), else as a plain string (``rrf``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_param(spec: str) -> TunedParam:
    """``"PATH=v1,v2,..."`` → :class:`TunedParam` (repeated values kept once, order kept)."""
    path, sep, values_text = spec.partition("=")
    if not sep or not path.strip():
        raise ConfigError(f"--param {spec!r}: expected PATH=v1,v2,...")
    values = [parse_value(v.strip()) for v in values_text.split(",") if v.strip()]
    if not values:
        raise ConfigError([ConfigIssue(path.strip(), "no values to try")])
    unique = list({json.dumps(v): v for v in values}.values())
    return TunedParam(path=path.strip(), keys=parse_path(path), values=tuple(unique))


def lookup(tree: Any, keys: Sequence[Key], path: str) -> Any:
    """The value at ``keys`` in ``tree``; a missing step is a ConfigError naming where it failed."""
    node, walked = tree, ""
    for key in keys:
        if isinstance(key, int):
            if node is None:
                raise ConfigError(
                    [ConfigIssue(path, f"{walked} is null (its default); set it in the config to tune its elements")]
                )
            if not isinstance(node, list) or key >= len(node):
                size = f"has {len(node)} elements" if isinstance(node, list) else "is not a list"
                raise ConfigError([ConfigIssue(path, f"no element [{key}]: {walked} {size}")])
        elif not isinstance(node, dict) or key not in node:
            known = f" (it has: {', '.join(map(str, node))})" if isinstance(node, dict) else ""
            raise ConfigError([ConfigIssue(path, f"no parameter {key!r} at {walked or 'the root'}{known}")])
        node, walked = node[key], join_path(walked, key)
    if keys[-1] == "component" or (isinstance(node, dict) and "component" in node):
        raise ConfigError([ConfigIssue(path, "names a component, not a parameter; tune one of its params")])
    if not isinstance(node, _SCALARS):
        raise ConfigError([ConfigIssue(path, f"is a {type(node).__name__}, not one parameter; tune one element")])
    return node


def with_values(config: dict, assignments: Mapping[tuple[Key, ...], Any]) -> dict:
    """A deep copy of ``config`` with each ``keys → value`` assignment made."""
    changed = copy.deepcopy(config)
    for keys, value in assignments.items():
        target = changed
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return changed


@dataclass
class GridPoint:
    """One point of the grid: the values tried (by path), the validated tree, its train figures."""

    values: dict[str, Any]
    config: dict
    train: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


def plan_grid(config: Any, params: Sequence[TunedParam], top_k: int | None = DEFAULT_TOP_K) -> list[GridPoint]:
    """Validate the tree, every path and every combination of values; return the grid's points.

    Every combination is validated as a whole tree, so a value is judged with
    the values it runs with (``ngram_min=2`` is fine beside ``ngram_max=3``).
    A problem located at a tuned path is reported as that path's value; any
    other (a cross-field rule) as the combination that breaks it. Everything
    is reported in one ConfigError, before anything is fitted.
    """
    normalised = validate_and_transform(config, "retriever")
    issues: dict[str, ConfigIssue] = {}  # by text: one line per distinct problem

    def add(issue: ConfigIssue) -> None:
        issues.setdefault(str(issue), issue)

    seen: set[tuple[Key, ...]] = set()
    present = []  # the params whose path exists: their values are still checked when another path is bad
    for param in params:
        if param.keys in seen:
            add(ConfigIssue(param.path, "given twice"))
            continue
        seen.add(param.keys)
        try:
            lookup(normalised, param.keys, param.path)
        except ConfigError as exc:
            for issue in exc.issues:
                add(issue)
            continue
        present.append(param)
        if param.keys[-1] == "top_k" and top_k_hint(top_k) is not None:
            add(
                ConfigIssue(
                    param.path,
                    f"has no effect while the top_k hint {top_k} overrides every "
                    "node's top_k; pass --top-k 0 to use the tree's own",
                )
            )
    by_path = {_written(p.keys): p for p in present}
    points, broken_combinations = [], 0
    for combination in itertools.product(*(p.values for p in present)):
        values = {p.path: v for p, v in zip(present, combination)}
        try:
            tree = validate_and_transform(
                with_values(normalised, {p.keys: v for p, v in zip(present, combination)}), "retriever"
            )
        except ConfigError as exc:
            # a broken cross-field rule is the combination's fault, even when reported at a tuned field
            rules = [issue for issue in exc.issues if issue.path not in by_path or isinstance(issue, RuleIssue)]
            for issue in exc.issues:
                if issue.path in by_path and not isinstance(issue, RuleIssue):
                    param = by_path[issue.path]
                    add(ConfigIssue(param.path, f"value {values[param.path]!r} is refused: {issue.message}"))
            broken_combinations += bool(rules)
            if rules and broken_combinations <= MAX_COMBINATIONS_SHOWN:
                add(ConfigIssue("", f"the combination {values} is refused: {rules[0]}"))
            continue
        points.append(GridPoint(values=values, config=tree))
    if broken_combinations > MAX_COMBINATIONS_SHOWN:
        add(ConfigIssue("", f"{broken_combinations - MAX_COMBINATIONS_SHOWN} more combinations are refused"))
    if issues:
        raise ConfigError(list(issues.values()))
    return points


def _written(keys: Sequence[Key]) -> str:
    """The path as validation errors write it (``params.children[0].params.k1``)."""
    path = ""
    for key in keys:
        path = join_path(path, key)
    return path


def _config_key(node: ConfigObject) -> str:
    return json.dumps(node.to_config(), sort_keys=True)


def subtree_keys(config: dict) -> set[str]:
    """The cache keys of every retriever subtree of ``config`` (built, never fitted: what ``build`` would look up)."""
    root = build_component(config, "retriever")
    return {_config_key(node) for _, node in root.iter_nodes() if isinstance(node, Retriever)}


class SubtreeCache:
    """Fitted retriever subtrees of one tuning run, shared between trees by their JSON config.

    ``build(config)`` constructs the tree, then walks it bottom-up: a retriever
    subtree already fitted under the same config is grafted in whole; anything
    else is fitted as ``init_model`` would (children first, then the node), or by
    the node's own ``init_model`` where a component overrides it. ``fitted``
    lists the component of every retriever node fitted, in order.

    A fitted subtree answers a repeated batch from memory only while its key is
    ``remember``-ed, until ``forget``: the caller says which subtrees a later tree
    reuses. Remembering every answer (each grid point's root included) held
    1,398 pseudo-queries x 100 hits with their traces per point and was killed
    for memory at 24 GB on SciFact (docs/finetuning.md); the memory now holds
    only answers that will be read again.
    """

    def __init__(self, infra: Infra):
        self.infra = infra
        self._by_config: dict[str, Retriever] = {}
        self._assembled: list[ConfigObject] = []
        self._answers: dict[str, dict[tuple, Any]] = {}
        self.fitted: list[str] = []

    def build(self, config: dict) -> Retriever:
        root = build_component(config, "retriever")
        root.inject_infra(self.infra)
        return self._assemble(root)  # type: ignore[return-value]

    def remember(self, keys: Iterable[str]) -> None:
        """Answers of these subtrees (see :func:`subtree_keys`) are kept from their next call on."""
        for key in keys:
            self._answers.setdefault(key, {})

    def forget(self, keys: Iterable[str]) -> None:
        """Drop the answers of these subtrees and stop keeping them."""
        for key in keys:
            self._answers.pop(key, None)

    @property
    def remembered_answers(self) -> int:
        """How many calls' answers are held now (what a test of the memory bound counts)."""
        return sum(len(answers) for answers in self._answers.values())

    def _assemble(self, node: ConfigObject) -> ConfigObject:
        key = _config_key(node)
        if isinstance(node, Retriever) and key in self._by_config:
            return self._by_config[key]
        if type(node).init_model is not ConfigObject.init_model:
            node.init_model()  # its own lifecycle: fit the whole subtree its way
            self._assembled.extend(n for _, n in node.iter_nodes())
        else:
            for name, value in node.nested.items():
                node.nested[name] = (
                    [self._assemble(c) for c in value] if isinstance(value, list) else self._assemble(value)
                )
            node._fit()
            self._assembled.append(node)
        if isinstance(node, Retriever):
            self.fitted.append(node.component_name)
            self._answer_from_memory(node, key)
            self._by_config[key] = node
        return node

    def _answer_from_memory(self, node: Retriever, key: str) -> None:
        """Make ``node`` answer a repeated call (same queries, same ``top_k`` hint) from memory while ``key``
        is remembered. Only unrestricted calls are remembered: a filter or a restriction goes to the node."""
        answer_batch, answer_one = node.retrieve_batch, node.retrieve
        answers = self._answers

        def retrieve_batch(queries: Sequence[str], *, top_k: int | None = None, filters: Any = None,
                           restriction: Restriction | None = None) -> Any:
            memory = answers.get(key)
            if memory is None or filters is not None or restriction is not None:
                return answer_batch(queries, top_k=top_k, filters=filters, restriction=restriction)
            call = ("batch", tuple(queries), top_k)
            if call not in memory:
                memory[call] = answer_batch(queries, top_k=top_k)
            return memory[call]

        def retrieve(query: str, *, top_k: int | None = None, filters: Any = None,
                     restriction: Restriction | None = None) -> Any:
            memory = answers.get(key)
            if memory is None or filters is not None or restriction is not None:
                return answer_one(query, top_k=top_k, filters=filters, restriction=restriction)
            call = ("one", query, top_k)
            if call not in memory:
                memory[call] = answer_one(query, top_k=top_k)
            return memory[call]

        node.retrieve_batch, node.retrieve = retrieve_batch, retrieve  # type: ignore[method-assign]

    def close(self) -> None:
        """Release every fitted node once (trees share nodes, so closing trees would repeat)."""
        for node in self._assembled:
            node._close()
        self._assembled.clear()
        self._by_config.clear()
        self._answers.clear()


class Reuse:
    """Which subtrees of a sequence of trees a later tree reuses, and when each is last used.

    A key used by one tree only (every grid point's root) is never remembered; a shared one (the
    children a grid point does not change) is remembered from its first tree to its last, then
    forgotten: with the grid's innermost parameter a query-time one, at most one BM25 leaf's and
    the dense child's answers are held at a time.
    """

    def __init__(self, configs: Sequence[dict]):
        self.keys = [subtree_keys(config) for config in configs]
        uses: dict[str, int] = {}
        self.last_use: dict[str, int] = {}
        for index, keys in enumerate(self.keys):
            for key in keys:
                uses[key] = uses.get(key, 0) + 1
                self.last_use[key] = index
        self.shared = {key for key, count in uses.items() if count > 1}

    def finished(self, index: int) -> set[str]:
        """The keys no tree after ``index`` uses."""
        return {key for key in self.keys[index] if self.last_use[key] == index}


@dataclass
class TuningResult:
    """The grid with its train figures, the best point, and both trees' test reports."""

    metric: str
    train_split: str
    params: list[TunedParam]
    points: list[GridPoint]
    best: int
    test: dict[str, Any] | None  # the tuned tree's report on the test split (None: no test split given)
    baseline_test: dict[str, Any] | None  # the untuned tree's report on the test split
    fitted: list[str]
    timings: dict[str, float]

    @property
    def best_point(self) -> GridPoint:
        return self.points[self.best]

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "train_split": self.train_split,
            "params": {p.path: list(p.values) for p in self.params},
            "points": [{"values": p.values, "train": p.train, "seconds": p.seconds} for p in self.points],
            "best": {
                "values": self.best_point.values,
                "train": self.best_point.train,
                "config": self.best_point.config,
            },
            "test": self.test,
            "baseline_test": self.baseline_test,
            "fitted_retrievers": len(self.fitted),
            "timings": self.timings,
        }


def best_index(points: Sequence[GridPoint], metric: str) -> int:
    """The point with the highest train ``metric``; ties go to the first in grid order."""
    return max(range(len(points)), key=lambda i: (points[i].train[metric], -i))


def tune(
    config: Any,
    params: Sequence[TunedParam],
    *,
    infra: Infra,
    train: EvaluationSplit,
    test: EvaluationSplit | None,
    metric: str = "ndcg@10",
    metrics: str | None = None,
    top_k: int | None = DEFAULT_TOP_K,
    on_point: Callable[[GridPoint], None] | None = None,
) -> TuningResult:
    """Grid-search ``params`` on ``train`` by ``metric``; score the best and the untuned tree on ``test``.

    ``metrics`` (default: just ``metric``) are the figures of the test reports. With ``test`` None
    nothing but ``train`` is read (the fine-tuning pipeline tunes on a dev slice and leaves the test
    split to the final evaluation).
    """
    label = parse_metric(metric).label
    points = plan_grid(config, params, top_k)
    test_metrics = [m.label for m in parse_metrics(metrics or label)]
    test_metrics = test_metrics if label in test_metrics else [label, *test_metrics]
    began = time.perf_counter()
    cache = SubtreeCache(infra)
    with young_garbage_only() as sweep:
        try:
            train_evaluator = Evaluator(train.qrels, [label])
            reuse = Reuse([point.config for point in points])
            cache.remember(reuse.shared)
            for index, point in enumerate(points):
                started = time.perf_counter()
                run = run_queries(cache.build(point.config), train.queries, top_k=top_k)
                point.train = dict(train_evaluator.evaluate(root_run(run.traces)).mean)
                del run
                cache.forget(reuse.finished(index))
                sweep()
                point.seconds = time.perf_counter() - started
                if on_point is not None:
                    on_point(point)
            search_s = time.perf_counter() - began
            best = best_index(points, label)
            tuned_report = baseline_report = None
            if test is not None:
                test_evaluator = Evaluator(test.qrels, test_metrics)
                baseline = validate_and_transform(config, "retriever")
                reuse = Reuse([points[best].config, baseline])
                cache.remember(reuse.shared)
                tuned_report = evaluate_tree(cache.build(points[best].config), test, test_evaluator, top_k=top_k)
                sweep()
                baseline_report = evaluate_tree(cache.build(baseline), test, test_evaluator, top_k=top_k)
                cache.forget(reuse.shared)
        finally:
            cache.close()
    return TuningResult(
        metric=label,
        train_split=train.split,
        params=list(params),
        points=points,
        best=best,
        test=tuned_report,
        baseline_test=baseline_report,
        fitted=cache.fitted,
        timings={"search_s": search_s, "total_s": time.perf_counter() - began},
    )


def plot_tuning(result: TuningResult, path: str | Path) -> Path:
    """One panel per tuned parameter: every grid point's train metric against that parameter's value,
    the best over the other parameters as a line, the chosen point as a star (matplotlib Agg, no pyplot)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4.2 * len(result.params), 3.8), layout="constrained")
    FigureCanvasAgg(figure)
    for index, param in enumerate(result.params):
        axes = figure.add_subplot(1, len(result.params), index + 1)
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in param.values)
        position = {json.dumps(v): (v if numeric else i) for i, v in enumerate(param.values)}
        xs = [position[json.dumps(p.values[param.path])] for p in result.points]
        ys = [p.train[result.metric] for p in result.points]
        axes.scatter(xs, ys, s=14, alpha=0.5, label="grid points")
        best_per_value = {x: max(y for xx, y in zip(xs, ys) if xx == x) for x in sorted(set(xs))}
        axes.plot(list(best_per_value), list(best_per_value.values()), marker="o", label="best over the others")
        chosen = result.best_point
        axes.scatter(
            [position[json.dumps(chosen.values[param.path])]],
            [chosen.train[result.metric]],
            marker="*",
            s=160,
            color="crimson",
            zorder=3,
            label="chosen",
        )
        if not numeric:
            axes.set_xticks(range(len(param.values)), [str(v) for v in param.values], rotation=20)
        axes.set_xlabel(param.path, fontsize=8)
        axes.set_ylabel(f"{result.metric} (train)")
        if index == 0:
            axes.legend(fontsize=7)
    dataset = f"{result.test['dataset']} " if result.test is not None else ""
    figure.suptitle(f"tuning {result.metric} on {dataset}{result.train_split}")
    path = Path(path)
    figure.savefig(path, format="png", dpi=110)
    return path
