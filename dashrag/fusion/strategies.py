"""The fusion algebra of ParallelRetriever: many best-first lists in, one out.

Each function takes one best-first ``list[ScoredChunk]`` per child and returns one
fused best-first list, deduplicated by chunk id. They are pure (no I/O, no state),
so ParallelRetriever, the trace and the tests all see the same arithmetic.

Modes (docs/fusion.md has the formulas and when to use which):

* ``round_robin`` -- the reference default: take turns; with weights, a child of
  weight 2 gets two turns per turn of a weight-1 child.
* ``rrf`` -- reciprocal rank fusion, ``sum_i w_i / (k + rank_i)``.
* ``relative_score`` -- per-child min-max normalisation, weighted mean.
* ``dist_based`` -- per-child mean +- 3 sigma normalisation, weighted mean.
* ``max`` -- weighted maximum of the min-max normalised scores.
* ``interleave`` -- DashAI's other mode: each child's list in turn, whole (the first child's
  list, then the second's new chunks, ...); a child of weight 0 contributes nothing.
* ``max_score`` -- the maximum of the *raw* scores, for children whose scores are
  on one scale (shards of one index: the same model, metric and engine). The
  fused top-k of the children's top-k lists is then exactly the top-k of one
  index over the whole corpus (docs/engines.md). Weights only switch a child
  off (weight 0); a positive weight never rescales a raw score.

Weights (default 1.0 each) are honoured by every mode: raising one child's weight
never moves one of its chunks below a chunk it did not return, and a child of
weight 0 contributes nothing (its chunks appear only through other children).

Ties are broken deterministically. The score-based modes and ``rrf`` order by
fused score, then by the best rank any contributing child gave the chunk, then by
chunk id -- no child index, so reordering the children (with their weights)
never reorders the result. Sums use ``math.fsum``, which is exactly rounded and so
independent of the order of the children too. ``round_robin`` has no score to
tie on: its order is the turn order, and turns that fall at the same moment go
to the lower child index, exactly as a plain interleave does.

Each fused chunk's ``provenance`` is ``{"fusion": mode, "fused_score": s,
"children": {"<index>": {"rank": r, "score": raw, ...}}}`` for every child that
returned it; the score-based modes add that child's ``normalised`` score.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Iterable, Literal, Sequence

from dashrag.documents.model import ScoredChunk
from dashrag.errors import ConfigError, ConfigIssue, RetrievalError
from dashrag.fusion.hits import Candidate, ChildHit, fusion_provenance, gather
from dashrag.fusion.normalise import distribution_normalise, min_max_normalise
from dashrag.fusion.weights import resolve_weights

FusionStrategy = Literal["round_robin", "interleave", "rrf", "relative_score", "dist_based", "max", "max_score"]
STRATEGY_NAMES: tuple[str, ...] = ("round_robin", "interleave", "rrf", "relative_score", "dist_based", "max",
                                   "max_score")
DEFAULT_RRF_K = 60
DEFAULT_SOURCE = "ParallelRetriever"

Results = Sequence[Sequence[ScoredChunk]]
Normaliser = Callable[[Sequence[float]], list[float]]


def rrf_term(rank: int, weight: float, k: float = DEFAULT_RRF_K) -> float:
    """One child's reciprocal-rank contribution: ``weight / (k + rank)``, rank 1-based."""
    return weight / (k + rank)


def round_robin_turn(rank: int, weight: float) -> Fraction:
    """The moment a child of ``weight`` serves its ``rank``-th chunk: ``(rank - 1/2) / weight``.

    This is the Sainte-Lague schedule: with weights 2 and 1 the turns fall at
    1/4, 3/4, 5/4, ... and 1/2, 3/2, ..., i.e. A B A A B A ..., the order a smooth
    weighted round robin gives; with equal weights every child's r-th turn falls
    at the same moment, which the lower child index takes first (plain
    interleave). Exact fractions keep those coincidences exact. Needs weight > 0.
    """
    return (2 * rank - 1) * _half_inverse(weight)


def _half_inverse(weight: float) -> Fraction:
    """``1 / (2 w)``, exactly: a float weight is a binary fraction."""
    return Fraction(1, 2) / Fraction(weight)


def round_robin(results: Results, weights: Sequence[float] | None = None,
                source: str = DEFAULT_SOURCE) -> list[ScoredChunk]:
    """Interleave the children's lists by weighted turns; a repeat of a chunk already taken is skipped.

    The fused score is ``1 / position`` (1.0, 0.5, 0.33, ...): round robin has no
    score of its own, and this keeps "higher is better" for whoever reads it next.
    """
    w = resolve_weights(weights, len(results))
    turn = _turn_clock(w)
    scheduled: list[tuple[tuple[Fraction | int, int], Candidate]] = []
    for candidate in gather(results):
        turns = [(turn(h.rank, h.child), h.child) for h in _contributing(candidate, w)]
        if turns:
            scheduled.append((min(turns), candidate))
    scheduled.sort(key=lambda item: item[0])
    return [_fused_chunk(candidate, 1.0 / position, "round_robin", source)
            for position, (_, candidate) in enumerate(scheduled, start=1)]


def interleave(results: Results, weights: Sequence[float] | None = None,
               source: str = DEFAULT_SOURCE) -> list[ScoredChunk]:
    """DashAI's ``interleave``: the children's lists one after the other, in child order, each chunk at its
    first appearance. Scored ``1 / position``, as round robin."""
    w = resolve_weights(weights, len(results))
    placed: list[tuple[tuple[int, int], Candidate]] = []
    for candidate in gather(results):
        hits = _contributing(candidate, w)
        if hits:
            placed.append((min((h.child, h.rank) for h in hits), candidate))
    placed.sort(key=lambda item: item[0])
    return [_fused_chunk(candidate, 1.0 / position, "interleave", source)
            for position, (_, candidate) in enumerate(placed, start=1)]


def _turn_clock(w: Sequence[float]) -> Callable[[int, int], Fraction | int]:
    """``(rank, child) -> key`` ordered exactly as :func:`round_robin_turn`, cheaply: with equal
    weights the rank itself (the turn is monotone in it), otherwise ``(2 rank - 1)`` times the
    child's ``1 / (2 w)`` computed once. Fusion sits on every query's path, and converting
    each weight to a Fraction per hit cost more than the BM25 child of a hybrid."""
    if len(set(w)) == 1:
        return lambda rank, child: rank
    # a child of weight 0 contributes no hit (``_contributing``), so its clock is never read
    half_inverse = [_half_inverse(x) if x > 0 else Fraction(0) for x in w]
    return lambda rank, child: (2 * rank - 1) * half_inverse[child]


def rrf(results: Results, weights: Sequence[float] | None = None, k: float = DEFAULT_RRF_K,
        source: str = DEFAULT_SOURCE) -> list[ScoredChunk]:
    """Reciprocal rank fusion: ``score = sum_i w_i / (k + rank_i)`` over the children that returned the chunk."""
    w = resolve_weights(weights, len(results))
    _check_rrf_k(k)
    keyed: list[tuple[float, Candidate, dict]] = []
    for candidate in gather(results):
        hits = _contributing(candidate, w)
        if hits:
            key = math.fsum(rrf_term(h.rank, w[h.child], k) for h in hits)
            keyed.append((key, candidate, {}))
    return _ranked(keyed, w, "rrf", source, divisor=1.0)


def relative_score(results: Results, weights: Sequence[float] | None = None,
                   source: str = DEFAULT_SOURCE) -> list[ScoredChunk]:
    """Relative score fusion: min-max normalise each child, then ``sum_i w_i n_i / sum_i w_i``."""
    return _weighted_mean_fusion(results, weights, min_max_normalise, "relative_score", source)


def dist_based(results: Results, weights: Sequence[float] | None = None,
               source: str = DEFAULT_SOURCE) -> list[ScoredChunk]:
    """Distribution-based fusion: mean +- 3 sigma normalise each child, then the weighted mean."""
    return _weighted_mean_fusion(results, weights, distribution_normalise, "dist_based", source)


def weighted_max(results: Results, weights: Sequence[float] | None = None,
                 source: str = DEFAULT_SOURCE) -> list[ScoredChunk]:
    """``score = max_i w_i n_i / max_j w_j`` over min-max normalised scores: the strongest single vote wins."""
    w = resolve_weights(weights, len(results))
    keyed = _keyed_by_weighted_votes(results, w, min_max_normalise, max)
    return _ranked(keyed, w, "max", source, divisor=max(w, default=1.0))


def max_raw_score(results: Results, weights: Sequence[float] | None = None,
                  source: str = DEFAULT_SOURCE) -> list[ScoredChunk]:
    """``score = max_i s_i`` over the raw scores of the children of positive weight.

    For shards of one index, where every child's score means the same thing: the
    union of the shards' top-k lists ordered by this score begins with the global top-k.
    """
    w = resolve_weights(weights, len(results))
    keyed: list[tuple[float, Candidate, dict]] = []
    for candidate in gather(results):
        hits = _contributing(candidate, w)
        if hits:
            keyed.append((max(h.score for h in hits), candidate, {}))
    return _ranked(keyed, w, "max_score", source, divisor=1.0)


STRATEGIES: dict[str, Callable[..., list[ScoredChunk]]] = {
    "round_robin": round_robin,
    "interleave": interleave,
    "rrf": rrf,
    "relative_score": relative_score,
    "dist_based": dist_based,
    "max": weighted_max,
    "max_score": max_raw_score,
}


def fuse(results: Results, strategy: str, weights: Sequence[float] | None = None,
         k: float = DEFAULT_RRF_K, source: str = DEFAULT_SOURCE,
         top_k: int | None = None) -> list[ScoredChunk]:
    """The one entry point: fuse ``results`` (one best-first list per child) with ``strategy``.

    ``k`` is used by ``rrf`` only. ``top_k`` (>= 1) cuts the fused list; ``None``
    keeps every chunk. Bad arguments raise :class:`ConfigError` naming the field.
    """
    if strategy not in STRATEGIES:
        raise ConfigError([ConfigIssue(
            "strategy", f"unknown fusion strategy {strategy!r}; expected one of {', '.join(STRATEGY_NAMES)}")])
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ConfigError([ConfigIssue("top_k", f"must be an integer >= 1 or None, got {top_k!r}")])
    if strategy == "rrf":
        fused = rrf(results, weights, k=k, source=source)
    else:
        fused = STRATEGIES[strategy](results, weights, source=source)
    return fused if top_k is None else fused[:top_k]


def _weighted_mean_fusion(results: Results, weights: Sequence[float] | None, normalise: Normaliser,
                          strategy: str, source: str) -> list[ScoredChunk]:
    """Shared body of relative_score and dist_based: they differ only in the normaliser.

    Chunks are ordered by the weighted *sum* and the reported score is that sum
    divided by the total weight (a convex combination, in [0, 1]). Ordering by the
    undivided sum keeps "more weight never hurts" exact under float rounding.
    """
    w = resolve_weights(weights, len(results))
    keyed = _keyed_by_weighted_votes(results, w, normalise, math.fsum)
    return _ranked(keyed, w, strategy, source, divisor=math.fsum(w))


def _keyed_by_weighted_votes(results: Results, w: Sequence[float], normalise: Normaliser,
                             combine: Callable[[Iterable[float]], float]) -> list[tuple[float, Candidate, dict]]:
    """``(key, candidate, provenance)`` for every candidate some positive-weight child returned: the key
    combines (sum, max) the children's votes ``w_i n_i``, each ``n_i`` the child's normalised score."""
    candidates = gather(results)
    normalised = _normalised_scores(candidates, w, normalise)
    keyed: list[tuple[float, Candidate, dict]] = []
    for candidate in candidates:
        hits = _contributing(candidate, w)
        if hits:
            key = combine(w[h.child] * normalised[(h.child, candidate.id)] for h in hits)
            keyed.append((key, candidate, _normalised_extra(candidate, normalised)))
    return keyed


def _normalised_scores(candidates: Sequence[Candidate], w: Sequence[float],
                       normalise: Normaliser) -> dict[tuple[int, int], float]:
    """``(child, chunk id) -> normalised score`` for every child of positive weight."""
    per_child: dict[int, list[tuple[int, float]]] = {}
    for candidate in candidates:
        for hit in _contributing(candidate, w):
            if not math.isfinite(hit.score):
                raise RetrievalError(
                    f"child {hit.child} gave chunk {candidate.id} the score {hit.score!r}; "
                    "score-based fusion needs finite scores")
            per_child.setdefault(hit.child, []).append((candidate.id, hit.score))
    table: dict[tuple[int, int], float] = {}
    for child, pairs in per_child.items():
        for (chunk_id, _), value in zip(pairs, normalise([score for _, score in pairs])):
            table[(child, chunk_id)] = value
    return table


def _normalised_extra(candidate: Candidate, normalised: dict[tuple[int, int], float]) -> dict[int, dict]:
    return {hit.child: {"normalised": normalised[(hit.child, candidate.id)]}
            for hit in candidate.hits if (hit.child, candidate.id) in normalised}


def _ranked(keyed: list[tuple[float, Candidate, dict]], w: Sequence[float], strategy: str, source: str,
            divisor: float) -> list[ScoredChunk]:
    """Sort by key (desc), then best contributing rank, then chunk id; report ``key / divisor``."""
    keyed.sort(key=lambda item: (-item[0], _best_rank(item[1], w), item[1].id))
    return [_fused_chunk(candidate, key / divisor, strategy, source, extra)
            for key, candidate, extra in keyed]


def _contributing(candidate: Candidate, w: Sequence[float]) -> list[ChildHit]:
    return [hit for hit in candidate.hits if w[hit.child] > 0]


def _best_rank(candidate: Candidate, w: Sequence[float]) -> int:
    return min(hit.rank for hit in _contributing(candidate, w))


def _fused_chunk(candidate: Candidate, score: float, strategy: str, source: str,
                 extra: dict[int, dict] | None = None) -> ScoredChunk:
    return ScoredChunk(chunk=candidate.chunk, score=score, source=source,
                       provenance=fusion_provenance(strategy, score, candidate.hits, extra))


def _check_rrf_k(k: float) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k < 0:
        raise ConfigError([ConfigIssue("k", f"RRF k must be a finite number >= 0, got {k!r}")])
