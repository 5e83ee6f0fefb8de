"""From an evaluated query's fragments to what ``retrieve`` returns: rerank, select, aggregate.

Three paths (docs/boolean_queries.md, "Selection"):

* **category_only**, when the query only filters (category clauses, NOT, TRUE): one
  document-level stub per matching document, as the reference returns them: no text,
  fragment id = the document id, score 1.0 (nothing was ranked).
* **reranked**, when the component has a reranker and the query has a semantic clause
  to rerank towards (``rerank_query``): rerank in rounds, then the tiers in order on the
  reranked list: threshold (tier 1), fragment diversity (tier 2), and with
  ``return_documents`` the document safety net (tier 3); at most
  ``max_reranked_documents`` documents (10) come out. The fill-up is the reference's
  separate later step; it runs here only when asked (``fill_up``).
* **fast**, otherwise (no reranker; or only text clauses, which a relevance model cannot
  improve): the fast path; with ``return_documents``, its fragments max-pooled into documents.

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
    within_documents,
)
from dashrag.documents.model import Chunk, ScoredChunk


def as_documents(fragments: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """One entry per document: its best fragment, scored by it, listing the document's fragments."""
    return [
        hit.best.rescored(hit.score, hit.best.source, document_fragments=[f.id for f in hit.fragments])
        for hit in aggregate_documents(fragments)
    ]


def document_stubs(fragments: Sequence[ScoredChunk], source: str = "category") -> list[ScoredChunk]:
    """One stub per document, in document id order: text None, ``fragment_id`` = the document id, score 1.0.

    The stub keeps the document's first chunk's id and position so dedup by id and qrels still work."""
    first: dict[str, Chunk] = {}
    for fragment in fragments:
        known = first.get(fragment.document_id)
        if known is None or fragment.chunk.position < known.position:
            first[fragment.document_id] = fragment.chunk
    return [ScoredChunk(Chunk(id=chunk.id, document_id=document_id, position=chunk.position,
                              text=None, metadata=chunk.metadata),  # type: ignore[arg-type]  # the reference's null
                        1.0, source, {"fragment_id": document_id, "document_stub": True})
            for document_id, chunk in sorted(first.items())]


def select_output(
    tree: Query,
    ranked: list[ScoredChunk],
    thresholds: SelectionThresholds,
    return_documents: bool,
    reranker: RerankFunction | None,
    rerank_source: str = "rerank",
    *,
    only_filters: bool = False,
    run_fill_up: bool = False,
) -> tuple[list[ScoredChunk], dict[str, Any]]:
    """The returned fragments (or documents), best first, and the record of every decision."""
    t = thresholds
    record: dict[str, Any] = {"candidates": len(ranked)}
    if only_filters:
        record["path"] = "category_only"
        stubs = document_stubs(ranked)
        record["documents"] = len(stubs)
        return stubs, record
    query = rerank_query(tree) if reranker is not None else ""
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
    selected, record["tiers"] = three_tier_select(reranked, t)
    if not return_documents:
        if run_fill_up:
            selected, record["fill_up"] = fill_up(selected, reranked, t)
        selected, record["max_reranked_documents"] = _capped(selected, t)
        return selected, record
    hits = select_documents(selected, t, reranked)
    pool = [f for h in hits for f in h.fragments]
    record["documents"] = {"tier3_kept": len(hits)}
    if run_fill_up:
        pool, record["fill_up"] = fill_up(pool, reranked, t)
    out, record["max_reranked_documents"] = _capped(as_documents(pool), t)
    record["documents"]["returned"] = len(out)
    return out, record


def _capped(fragments: list[ScoredChunk], t: SelectionThresholds) -> tuple[list[ScoredChunk], dict[str, int]]:
    """At most ``max_reranked_documents`` documents after reranking, and the record of the cut."""
    kept, dropped = within_documents(fragments, t.max_reranked_documents)
    return kept, {"limit": t.max_reranked_documents, "dropped_documents": dropped}
