"""Reranking a boolean query's fragments: the rerank query, and rerank in rounds.

The rerank query is built from the *semantic* clauses only, joined with `` AND ``:
category clauses were already applied as filters, and text clauses are exact
matches that a relevance model cannot improve. Clauses under a NOT are left out,
since reranking towards what the user excluded would promote it; a phrase written
twice counts once.

A reranker has a fixed input budget, so a large candidate list is processed in
rounds of at most ``round_size`` fragments (never silently cut), each text cut to
``max_chars`` characters for the reranker only (the fragment keeps its full text),
and the rounds are merged, deduplicated by chunk id and sorted globally.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from dashrag.boolean.ast import Query, Semantic, iter_clauses
from dashrag.documents.model import ScoredChunk
from dashrag.errors import RetrievalError

# (query, truncated texts, the fragments they come from) -> one score per text, higher is better.
# Text rerankers ignore the fragments; retrievers address chunks by id through them.
RerankFunction = Callable[[str, Sequence[str], Sequence[ScoredChunk]], Sequence[float]]


def semantic_clauses(node: Query) -> list[Semantic]:
    """The semantic clauses not under a NOT, in reading order, each phrase once."""
    seen: set[str] = set()
    found: list[Semantic] = []
    for clause, negated in iter_clauses(node):
        if isinstance(clause, Semantic) and not negated and clause.phrase not in seen:
            seen.add(clause.phrase)
            found.append(clause)
    return found


def rerank_query(node: Query) -> str:
    """The phrases of ``semantic_clauses`` joined by `` AND ``; empty when there are none (skip reranking)."""
    return " AND ".join(clause.phrase for clause in semantic_clauses(node))


def plan_rounds(count: int, round_size: int) -> list[tuple[int, int]]:
    """``[start, end)`` slices covering ``count`` items in rounds of at most ``round_size``."""
    if round_size < 1:
        raise ValueError(f"round_size must be >= 1, got {round_size}")
    return [(start, min(start + round_size, count)) for start in range(0, count, round_size)]


def rerank_in_rounds(
    query: str,
    fragments: Sequence[ScoredChunk],
    rerank: RerankFunction,
    round_size: int = 5000,
    max_chars: int = 24000,
    source: str = "rerank",
) -> tuple[list[ScoredChunk], dict[str, Any]]:
    """Rescore ``fragments`` with ``rerank(query, texts, round_fragments) -> scores``; return them
    best first and a trace record. Text rerankers read the (truncated) texts; rerankers that
    address chunks by id read the round's fragments.

    Duplicates (same chunk id) are reranked once, from their best-scored copy. A
    reranker that returns the wrong number of scores, or a non-finite one, is an error.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    unique: dict[int, ScoredChunk] = {}
    for fragment in fragments:
        if fragment.id not in unique or fragment.score > unique[fragment.id].score:
            unique[fragment.id] = fragment
    candidates = sorted(unique.values(), key=lambda f: (-f.score, f.id))
    rounds = plan_rounds(len(candidates), round_size)
    merged: dict[int, ScoredChunk] = {}
    truncated = 0
    for number, (start, end) in enumerate(rounds):
        batch = candidates[start:end]
        texts = [f.chunk.text[:max_chars] for f in batch]
        truncated += sum(len(f.chunk.text) > max_chars for f in batch)
        scores = list(rerank(query, texts, batch))
        if len(scores) != len(batch):
            raise RetrievalError(
                f"the reranker returned {len(scores)} scores for {len(batch)} texts in round {number + 1}"
            )
        for fragment, score in zip(batch, scores):
            if not math.isfinite(float(score)):
                raise RetrievalError(f"the reranker returned a non-finite score {score!r} in round {number + 1}")
            rescored = fragment.rescored(
                float(score), source=source, pre_rerank_score=fragment.score, rerank_round=number + 1
            )
            kept = merged.get(fragment.id)
            if kept is None or rescored.score > kept.score:
                merged[fragment.id] = rescored
    ranked = sorted(merged.values(), key=lambda f: (-f.score, f.id))
    info = {"query": query, "rounds": [end - start for start, end in rounds], "truncated_texts": truncated}
    return ranked, info
