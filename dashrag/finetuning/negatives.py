"""Hard negatives mined with the user's own first-stage tree (BM25 by default).

A hard negative is a document the first stage ranks high for a query but nobody judged relevant
(a document judged 0 included):
the mistakes the model should learn to avoid. The tree is any dashrag retriever config (the
``keyword`` preset by default), built over the corpus with each document whole, so the negatives
come from the same retriever the user runs, not from a second BM25 written for training.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from dashrag.evaluation.beir import EvaluationSplit

WHOLE_DOCUMENTS: dict[str, Any] = {"component": "WholeDocumentChunker", "params": {}}
DEFAULT_DEPTH = 30  # candidates read per query: enough for a few negatives after the judged documents


@dataclass(frozen=True)
class Candidates:
    """Each query's first-stage ranking: document ids, best first."""

    ranked: Mapping[str, list[str]]


def rank_documents(
    tree: Any,
    split: EvaluationSplit,
    *,
    depth: int = DEFAULT_DEPTH,
    batch_size: int = 64,
    on_batch: Callable[[int], None] | None = None,
) -> Candidates:
    """Every query's top ``depth`` documents (deduplicated, first chunk's rank) from a built ``tree``."""
    ids = list(split.queries)
    ranked: dict[str, list[str]] = {}
    for start in range(0, len(ids), batch_size):
        batch = ids[start:start + batch_size]
        answers = tree.retrieve_batch([split.queries[q] for q in batch], top_k=depth)
        for query_id, (chunks, _) in zip(batch, answers):
            ranked[query_id] = list(dict.fromkeys(c.document_id for c in chunks))
        if on_batch is not None:
            on_batch(len(batch))
    return Candidates(ranked)


def hard_negatives(candidates: Candidates, judged: Mapping[str, Mapping[str, int]], query_id: str,
                   count: int, skip: int = 0) -> list[str]:
    """The first ``count`` documents of the query's ranking not judged relevant, after skipping ``skip`` of
    them (skipping the very top guards against relevant documents nobody judged). A document judged 0
    (graded qrels: judged and found not relevant) is the surest hard negative, so it stays in."""
    relevant = {d for d, grade in judged.get(query_id, {}).items() if grade > 0}
    misses = [d for d in candidates.ranked.get(query_id, []) if d not in relevant]
    return misses[skip:skip + count]


def fit_tree(config: Any, infra: Any) -> Any:
    """The first-stage tree fitted on a corpus already chunked and stored (``infra``): the fit timed apart
    from the storing, since the tuner refits the tree on the same store."""
    from dashrag.core.factory import build_component

    tree = build_component(config, "retriever")
    tree.inject_infra(infra)
    try:
        tree.init_model()
    except BaseException:
        tree.close()
        raise
    return tree


def build_first_stage(config: Any, corpus: Any, workdir: Path) -> Any:
    """The first-stage tree over the corpus, each document one chunk (as BEIR scores documents)."""
    import dashrag

    return dashrag.build(config, corpus, workdir, chunker=WHOLE_DOCUMENTS)


def negatives_per_pair(candidates: Candidates, judged: Mapping[str, Mapping[str, int]],
                       pairs: Sequence[Any], skip: int = 0) -> list[str | None]:
    """One hard negative per pair: a query's i-th judged pair gets its i-th unjudged candidate,
    so a query with several positives does not repeat one negative; None when the ranking runs out."""
    seen: dict[str, int] = {}
    chosen: list[str | None] = []
    for pair in pairs:
        i = seen.get(pair.query_id, 0)
        seen[pair.query_id] = i + 1
        found = hard_negatives(candidates, judged, pair.query_id, 1, skip + i)
        chosen.append(found[0] if found else None)
    return chosen
