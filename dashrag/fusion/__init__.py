"""Fusion of several children's best-first lists into one (the algebra of ParallelRetriever).

``fuse(results, strategy, weights=None, k=60, source=..., top_k=None)`` is the
entry point; the per-mode functions and the normalisations are exported so their
arithmetic can be checked on its own. See docs/fusion.md.
"""

from dashrag.fusion.hits import Candidate, ChildHit, fusion_provenance, gather
from dashrag.fusion.normalise import distribution_normalise, min_max_normalise
from dashrag.fusion.strategies import (
    DEFAULT_RRF_K,
    DEFAULT_SOURCE,
    STRATEGIES,
    STRATEGY_NAMES,
    FusionStrategy,
    dist_based,
    fuse,
    relative_score,
    round_robin,
    round_robin_turn,
    rrf,
    rrf_term,
    weighted_max,
)
from dashrag.fusion.weights import resolve_weights

__all__ = [
    "Candidate",
    "ChildHit",
    "DEFAULT_RRF_K",
    "DEFAULT_SOURCE",
    "FusionStrategy",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "dist_based",
    "distribution_normalise",
    "fuse",
    "fusion_provenance",
    "gather",
    "min_max_normalise",
    "relative_score",
    "resolve_weights",
    "round_robin",
    "round_robin_turn",
    "rrf",
    "rrf_term",
    "weighted_max",
]
