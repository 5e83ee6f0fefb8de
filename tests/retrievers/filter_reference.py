"""Brute-force filter-then-rank for any tree: what a filtered query must return (docs/filters.md, "The reference").

``reference(node, query, allowed, top_k)`` is written from the rule, not from the code paths a
filter takes, and never passes a filter or a restriction to anything:

* a **leaf** (BM25, TF-IDF, dense, on any engine): its whole *unfiltered* ranking, restricted to the
  chunks of the ``allowed`` documents, cut at its k, scores unchanged;
* a **composite** is its own combination step applied to its children's references:
  Parallel fuses the children's references (``dashrag.fusion.fuse``, the node's strategy, weights,
  rrf_k and top_k); Sequential re-scores the first stage's reference with each later stage's
  ``score_chunks`` (unfiltered: a distance does not depend on the other chunks) and keeps each
  stage's top_k; MMR runs ``mmr_select`` over the child's reference; the cross-encoder and the
  HTTP reranker score the child's reference pointwise (``predict``, the server) and keep the best
  k; the LLM reranker shows the child's reference to the model and keeps what it picks.

So a reranker's filtered answer is the reranking of the *filtered* candidate pool (it always holds
k where k matching candidates exist), not the unfiltered reranked list restricted afterwards.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from dashrag.core.ranking import rerank_by_scores
from dashrag.core.retriever import UnitRetriever
from dashrag.documents.model import ScoredChunk
from dashrag.embeddings.overflow import unit_rows
from dashrag.fusion import fuse
from dashrag.retrievers.agentic import AgenticRerankerRetriever, dedupe_and_cap
from dashrag.retrievers.cross_encoder import CrossEncoderRetriever
from dashrag.retrievers.http_reranker import HttpReranker
from dashrag.retrievers.mmr import MMRRerankerRetriever, mmr_select
from dashrag.retrievers.parallel import ParallelRetriever
from dashrag.retrievers.sequential import SequentialRetriever

#: what the LLM picks among the candidates it is shown (1-based numbers, best first)
Picker = Callable[[Sequence[ScoredChunk]], Sequence[int]]


def reference(node, query: str, allowed: set[str], top_k: int | None = None,
              pick: Picker | None = None) -> list[ScoredChunk]:
    """The chunks (with scores) ``node`` must return for ``query`` under a filter matching the ``allowed``
    documents, asked for ``top_k`` (None: the node's own)."""
    if isinstance(node, UnitRetriever):
        k = top_k if top_k is not None else node.params.top_k
        everything, _ = node.retrieve(query, top_k=len(node.require_infra().chunks))
        return [c for c in everything if c.document_id in allowed][:k]
    if isinstance(node, ParallelRetriever):
        p = node.params
        lists = [reference(child, query, allowed, top_k, pick) for child in node.get_children()]
        return fuse(lists, p.merge_strategy, p.weights, k=p.rrf_k, source=node.component_name,
                    top_k=top_k if top_k is not None else p.top_k)
    if isinstance(node, SequentialRetriever):
        first, *later = node.get_children()
        kept = reference(first, query, allowed, None, pick)
        for stage in later:
            by_id = {c.id: c for c in kept}
            ranked = stage.score_chunks(list(by_id), query)[:getattr(stage.params, "top_k", None)]
            kept = [by_id[cid].rescored(-distance, stage.component_name) for cid, distance in ranked]
        return kept[:top_k] if top_k is not None else kept
    k = top_k if top_k is not None else node.params.top_k
    if isinstance(node, AgenticRerankerRetriever):
        candidates = dedupe_and_cap(reference(node.child, query, allowed, node.params.k1, pick), node.params.k1)
        if len(candidates) <= node.params.top_k:
            return candidates
        assert pick is not None, "the LLM reranker's reference needs the model's pick"
        return [candidates[n - 1].rescored(1.0 / rank, node.component_name)
                for rank, n in enumerate(pick(candidates), start=1)]
    fetch_k = getattr(node.params, "fetch_k", None)
    if isinstance(node, HttpReranker):
        candidates = reference(node.nested["children"][0], query, allowed, max(node.params.fetch_k, k), pick)
        scores = np.asarray(node.rerank_texts(query, [c.chunk.text for c in candidates]), dtype=np.float64)
        return rerank_by_scores(candidates, scores, k, node.component_name)[0]
    candidates = reference(node.child, query, allowed, None if fetch_k is None else max(fetch_k, k), pick)
    if isinstance(node, CrossEncoderRetriever):
        scores = node.predict([(query, c.chunk.text) for c in candidates])
        return rerank_by_scores(candidates, scores, k, node.component_name)[0]
    if isinstance(node, MMRRerankerRetriever):
        if len(candidates) <= k:
            return candidates
        dense, _ = node.vector_source()
        ids = [c.id for c in candidates]
        vectors = unit_rows(dense.vectors_for(ids) if dense is not None else
                            node.nested["embedding"].embed_documents([c.chunk.text for c in candidates]))
        picks = mmr_select(np.array([c.score for c in candidates]), vectors @ vectors.T, node.params.lambda_mult, k)
        return [candidates[p.index] for p in picks]
    raise TypeError(f"no reference for {node.component_name}")


def assert_same_answer(found: Sequence[ScoredChunk], expected: Sequence[ScoredChunk], name: str) -> None:
    """The same chunks in the same order, with the same scores (to 1e-5: float32 scores, float64 fusion)."""
    assert [c.id for c in found] == [c.id for c in expected], name
    np.testing.assert_allclose([c.score for c in found], [c.score for c in expected], atol=1e-5, err_msg=name)
