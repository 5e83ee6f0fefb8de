"""Answering a boolean query's clauses with a retriever tree: the component's leaf evaluator.

``ClauseRunner`` is the ``LeafEvaluator`` that :func:`dashrag.boolean.evaluate` calls
for each clause, bound to one query (it collects the child retrievers' trace nodes
and one decision record per clause for that query's trace):

* **semantic** ``"phrase"``: the child retriever (by default the hybrid: BM25 + dense)
  answers with a restriction to the clause's scope, applied before its top-k. A
  phrase of at most ``max_words_for_hybrid`` words goes to the whole child (dense and
  keyword search combined); a longer one goes to the child's dense node alone
  (keyword search over a long phrase only adds noise), where the child has one.
  Scores are made comparable across clauses and with ``min_score`` by
  ``score_mode`` (``resolve_score_mode``): ``dense_cosine`` re-scores every hit by
  the dense node's own similarity to the phrase (cosine for the default metric),
  whatever found it; ``max_normalised`` divides the child's scores by the clause's
  best over the query's scope, even where an AND's filter narrowed the clause (so a
  filter keeps its partner's scores as the clause alone gives them; for children
  without a dense node, e.g. BM25); ``child`` keeps the child's
  scores (for children whose scores are already similarities, e.g. TF-IDF cosine).
  Hits scoring below ``min_score`` are dropped. Every clause's scores stay within 0..1,
  as the reference's do (``clause_scores`` clips what a metric or a ``child`` score puts
  outside), so AND's geometric mean, OR's maximum and the selection's ``min_score`` read
  every clause on one scale.
* **text** ``'text'`` / ``@'Text'``: every chunk in scope containing the phrase
  (``TextIndex``), scored by BM25 of its words divided by the clause's best over the
  query's scope (so the best match scores 1.0, and a filter ANDed to the clause leaves
  its scores as they are; the raw BM25 is in the provenance, ``bm25``).
* **category** ``NAME=V1,V2``: every chunk of the documents in scope carrying a value
  (``CategoryIndex``), score 1.0, as a lazy filter.

It also adapts any reranker component to the function ``rerank_in_rounds`` calls
(``reranker_function``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from dashrag.boolean.algebra import FragmentSet, Scope
from dashrag.boolean.ast import Category, Clause, Semantic, Text
from dashrag.boolean.category_index import CategoryIndex
from dashrag.boolean.rerank import RerankFunction
from dashrag.boolean.serialise import serialise
from dashrag.boolean.text_index import TextIndex
from dashrag.core.restriction import Restriction
from dashrag.core.retriever import Retriever
from dashrag.documents.model import ScoredChunk
from dashrag.errors import ConfigError

if TYPE_CHECKING:
    from dashrag.documents.chunk_set import ChunkSet

SCORE_MODES = ("auto", "dense_cosine", "max_normalised", "child")


@runtime_checkable
class DenseNode(Protocol):
    """What a semantic clause needs from a dense retriever (``DenseEmbeddingRetriever`` is one).

    A protocol rather than the class, so ``boolean/`` imports no concrete retriever
    (docs/design.md, import contracts): retrieve like any retriever, embed a phrase,
    and score query vectors against every chunk under the node's own metric.
    """

    component_name: str

    def retrieve(self, query: str, *, top_k: int | None = None,
                 restriction: Restriction | None = None) -> tuple[list[ScoredChunk], dict]: ...

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray: ...

    def score_vectors(self, query_vectors: np.ndarray) -> np.ndarray: ...


def find_dense_node(child: Retriever) -> DenseNode | None:
    """The first dense node in the child's subtree (the child itself, or the hybrid's dense half):
    a retriever that embeds queries and scores vectors."""
    for _, node in child.iter_nodes():
        if isinstance(node, Retriever) and isinstance(node, DenseNode):
            return node
    return None


def resolve_score_mode(mode: str, has_dense: bool) -> str:
    """``auto`` → ``dense_cosine`` where the child holds a dense node, else ``max_normalised``."""
    if mode not in SCORE_MODES:
        raise ConfigError(f"unknown semantic score mode {mode!r}; known: {', '.join(SCORE_MODES)}")
    if mode == "auto":
        return "dense_cosine" if has_dense else "max_normalised"
    if mode == "dense_cosine" and not has_dense:
        raise ConfigError("semantic_score 'dense_cosine' needs a DenseEmbeddingRetriever inside the child; "
                          "use 'max_normalised' or 'child' for keyword children")
    return mode


def clause_scores(scores: np.ndarray) -> np.ndarray:
    """A clause's scores within 0..1, as the reference's are: a similarity below 0 (an opposite cosine) is 0, one
    above 1 (a dot product of unnormalised vectors, a ``child`` score that is no similarity) is 1."""
    return np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)


def max_normalised(scores: np.ndarray) -> np.ndarray:
    """Scores divided by their maximum (so the best is 1.0); all zero when the maximum is not positive."""
    scores = np.asarray(scores, dtype=np.float64)
    return divided_by(scores, float(scores.max(initial=0.0)))


def divided_by(scores: np.ndarray, best: float) -> np.ndarray:
    """Scores divided by ``best`` (the clause's best over the query's whole scope); zero when it is not positive."""
    scores = np.asarray(scores, dtype=np.float64)
    return scores / best if best > 0 else np.zeros_like(scores)


class DocumentMaskRestriction(Restriction):
    """A restriction to some documents whose mask over the chunk set is already known.

    The plain ``Restriction.to_documents`` tests every document of the corpus against
    the allowed set in Python on first use; the component knows the positions of its
    documents, so it hands leaves the finished mask (and the set, for any other chunk set).
    """

    def __init__(self, documents: frozenset[str], chunks: ChunkSet, mask: np.ndarray):
        super().__init__(documents=documents)
        self._cache[id(chunks)] = mask
        self._chunks_id = id(chunks)

    def row_mask(self, chunks: ChunkSet) -> np.ndarray:
        """As ``Restriction.row_mask``; for a category index's set, computed once and kept on the set."""
        memo = getattr(self.documents, "memo", None)
        if memo is None or id(chunks) != self._chunks_id:
            return super().row_mask(chunks)
        key = ("row_mask", id(chunks))
        rows = memo.get(key)
        if rows is None:
            rows = memo[key] = super().row_mask(chunks)
        return rows


@dataclass
class SemanticSettings:
    top_k: int
    max_words_for_hybrid: int
    min_score: float
    score_mode: str  # resolved: dense_cosine | max_normalised | child


@dataclass
class ClauseRunner:
    """The leaf evaluator of one query (module docstring)."""

    chunks: ChunkSet
    texts: Sequence[str]
    child: Retriever
    dense: DenseNode | None
    text_index: TextIndex
    categories: CategoryIndex
    semantic: SemanticSettings
    restriction_for: Callable[[Scope], Restriction | None]
    base_scope: Scope  # the query's own scope: a clause's scores are normalised over it, whatever narrows the clause
    child_traces: list[dict] = field(default_factory=list)
    clauses: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, clause: Clause, scope: Scope) -> list[ScoredChunk] | FragmentSet:
        if isinstance(clause, Category):
            return scope.filter_fragments(self.categories.documents(clause.name, clause.values), source="category")
        if isinstance(clause, Text):
            return self.text(clause, scope)
        if isinstance(clause, Semantic):
            return self.semantic_clause(clause, scope)
        raise TypeError(f"not a clause: {clause!r}")

    def text(self, clause: Text, scope: Scope) -> list[ScoredChunk]:
        restriction = self.restriction_for(scope)
        allowed = None if restriction is None else restriction.row_mask(self.chunks)
        rows, scores = self.text_index.search(clause.text, clause.case_sensitive, self.texts, allowed)
        best = float(scores.max(initial=0.0))
        if self.narrowed(scope):  # an AND's filter narrowed the clause: its best over the query's scope divides
            base = self.restriction_for(self.base_scope)
            base_allowed = None if base is None else base.row_mask(self.chunks)
            _, everywhere = self.text_index.search(clause.text, clause.case_sensitive, self.texts, base_allowed)
            best = max(best, float(everywhere.max(initial=0.0)))
        found = [ScoredChunk(c, float(v), "text", {"bm25": float(s)})
                 for c, s, v in zip(self.chunks.chunks_at(rows.tolist()), scores.tolist(),
                                    divided_by(scores, best).tolist())]
        self.clauses.append({"clause": serialise(clause), "kind": "text", "matches": len(found)})
        return found

    def semantic_clause(self, clause: Semantic, scope: Scope) -> list[ScoredChunk]:
        s = self.semantic
        words = len(clause.phrase.split())
        retriever: Retriever | DenseNode = (
            self.dense if self.dense is not None and words > s.max_words_for_hybrid else self.child
        )
        hybrid = retriever is self.child
        restriction = self.restriction_for(scope)
        started = time.perf_counter()
        hits, node = retriever.retrieve(clause.phrase, top_k=s.top_k, restriction=restriction)
        self.child_traces.append(node)
        scores = clause_scores(self.comparable_scores(clause.phrase, hits, native_dense=retriever is self.dense,
                                                      retriever=retriever, scope=scope))
        kept = [ScoredChunk(h.chunk, v, "semantic", {**h.provenance, "child_score": h.score})
                for h, v in zip(hits, scores.tolist()) if v >= s.min_score]
        self.clauses.append({
            "clause": serialise(clause), "kind": "semantic", "words": words,
            "retriever": "hybrid" if hybrid and self.dense is not None else retriever.component_name,
            "score": s.score_mode, "returned": len(hits), "below_min_score": len(hits) - len(kept),
            "elapsed_ms": round((time.perf_counter() - started) * 1000.0, 3),
        })
        return kept

    def narrowed(self, scope: Scope) -> bool:
        """Whether ``scope`` is smaller than the query's own (an AND's filter operand narrowed it)."""
        return len(scope.document_ids) < len(self.base_scope.document_ids)

    def comparable_scores(self, phrase: str, hits: Sequence[ScoredChunk], native_dense: bool,
                          retriever: Retriever | DenseNode, scope: Scope) -> np.ndarray:
        raw = np.fromiter((h.score for h in hits), dtype=np.float64, count=len(hits))
        mode = self.semantic.score_mode
        if not hits or mode == "child" or (mode == "dense_cosine" and native_dense):
            return raw
        if mode == "max_normalised":
            best = float(raw.max(initial=0.0))
            if self.narrowed(scope):  # the clause's best over the query's scope, as the clause alone divides by
                top, _ = retriever.retrieve(phrase, top_k=1, restriction=self.restriction_for(self.base_scope))
                best = max([best, *(h.score for h in top)])
            return divided_by(raw, best)
        assert self.dense is not None  # resolve_score_mode guarantees it
        rows = self.chunks.rows_of([h.id for h in hits])
        return np.asarray(self.dense.score_vectors(self.dense.embed_queries([phrase]))[0][rows], dtype=np.float64)


def reranker_function(component: Any) -> RerankFunction:
    """The function ``rerank_in_rounds`` calls for ``component``: higher is better.

    A component that scores texts (``rerank_texts(query, texts)``, the HTTP reranker;
    ``predict(pairs)``, the cross-encoder) gets the truncated texts. Any other
    retriever is asked through the retriever contract, ``score_chunks(ids, query)``,
    and its distance negated: it reads the chunks' full texts itself.
    """
    if callable(getattr(component, "rerank_texts", None)):
        return lambda query, texts, _fragments: component.rerank_texts(query, list(texts))
    if callable(getattr(component, "predict", None)):
        return lambda query, texts, _fragments: np.asarray(component.predict([(query, t) for t in texts])).tolist()

    def by_ids(query: str, texts: Sequence[str], fragments: Sequence[ScoredChunk]) -> list[float]:
        distances = dict(component.score_chunks([f.id for f in fragments], query))
        return [-distances[f.id] for f in fragments]

    return by_ids
