"""From an evaluated query's fragments to what ``retrieve`` returns: rerank, select, aggregate.

Two paths (docs/boolean_queries.md, "Selection"):

* **reranked**, when the component has a reranker and the query has a semantic clause
  to rerank towards (``rerank_query``): rerank in rounds, then the three-tier
  selection and the fill-up; with ``return_documents``, tier 3 (document aggregation,
  at least ``min_documents``) and then the fill-up at document level.
* **fast**, otherwise (no reranker; or only category and text clauses, which a
  relevance model cannot improve): the fast path; with ``return_documents``, its
  fragments max-pooled into documents.

A document is returned as its best fragment, scored by it (max-pool), with the
number and ids of its selected fragments in the provenance.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from dashrag.boolean.ast import Query
from dashrag.boolean.rerank import RerankFunction, rerank_in_rounds, rerank_query
from dashrag.boolean.selection import (
    SelectionThresholds,
    aggregate_documents,
    fast_path_select,
    fill_up,
    select_documents,
    three_tier_select,
)
from dashrag.documents.model import ScoredChunk


def as_documents(fragments: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """One entry per document: its best fragment, scored by it, listing the document's fragments."""
    return [
        hit.best.rescored(hit.score, hit.best.source, document_fragments=[f.id for f in hit.fragments])
        for hit in aggregate_documents(fragments)
    ]


def select_output(
    tree: Query,
    ranked: list[ScoredChunk],
    thresholds: SelectionThresholds,
    return_documents: bool,
    reranker: RerankFunction | None,
    rerank_source: str = "rerank",
) -> tuple[list[ScoredChunk], dict[str, Any]]:
    """The returned fragments (or documents), best first, and the record of every decision."""
    t = thresholds
    query = rerank_query(tree) if reranker is not None else ""
    record: dict[str, Any] = {"candidates": len(ranked)}
    if not query or reranker is None:
        record["path"] = "fast"
        if reranker is not None:
            record["why_not_reranked"] = "the query has no semantic clause outside a NOT to rerank towards"
        selected = fast_path_select(ranked, t)
        record["fast_path"] = {"kept": len(selected), "documents": len({f.document_id for f in selected})}
        out = as_documents(selected) if return_documents else selected
        return out, record
    record["path"] = "reranked"
    started = time.perf_counter()
    reranked, info = rerank_in_rounds(query, ranked, reranker, t.rerank_round_size, t.rerank_max_chars,
                                      source=rerank_source)
    record["rerank"] = {**info, "elapsed_ms": round((time.perf_counter() - started) * 1000.0, 3)}
    if return_documents:
        hits = select_documents(reranked, t)
        filled, record["fill_up"] = fill_up([h.best for h in hits], reranked, t)
        kept = {h.document_id for h in hits}
        pool = [f for h in hits for f in h.fragments] + [f for f in filled if f.document_id not in kept]
        out = as_documents(pool)
        record["documents"] = {"tier3_kept": len(hits), "after_fill_up": len(out)}
        return out, record
    selected, record["tiers"] = three_tier_select(reranked, t)
    filled, record["fill_up"] = fill_up(selected, reranked, t)
    return filled, record
