"""Walk a syntax tree, ask a leaf evaluator for each clause, combine with the fragment algebra.

The evaluator knows nothing of retrievers: a component passes a ``LeafEvaluator``
(a callable ``(clause, scope) -> fragments``) that runs dense, text or category
search restricted to the scope's documents. This module guarantees the rest:

* every leaf result is cut to the scope (a leaf that ignores the restriction cannot
  leak documents) and marked a filter exactly when the clause is a category clause;
  a leaf may answer with a ``FragmentSet`` (a category index's lazy filter), which is
  cut by its documents without building its fragments;
* inside an AND, the operands that hold only category clauses run first and the
  scope of the other operands shrinks to the documents they allow, so a category
  filter is applied *before* each retriever's top-k (a filter truly excludes, and
  top-k still returns k where the restricted set has k);
* an optional ``rerank_branch`` callable ``(branch_text, fragments) -> fragments``
  rescores each scored operand of an AND or OR with that branch's own serialised
  text before the operands combine (``automatically_rerank``);
* every node gets a JSON-ready trace record: its text, type, fragment and document
  counts, top scores, whether it is a filter, the scope size and elapsed time, and,
  with ``trace_fragments``, its best fragments (``top``); ``tree_summary`` renders
  the records as one line.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from dashrag.boolean.algebra import (
    FilterFragments,
    FragmentSet,
    Scope,
    combine_and,
    combine_or,
    complement,
    memo_of,
)
from dashrag.boolean.ast import And, Category, Clause, Not, Or, Query, Semantic, Text, TrueNode, is_filter_only
from dashrag.boolean.serialise import serialise
from dashrag.documents.model import ScoredChunk

LeafEvaluator = Callable[[Clause, Scope], "Iterable[ScoredChunk] | FragmentSet"]
BranchReranker = Callable[[str, FragmentSet], Iterable[ScoredChunk]]

TOP_SCORES_IN_TRACE = 5
_NODE_TYPES = {
    Semantic: "semantic",
    Text: "text",
    Category: "category",
    And: "and",
    Or: "or",
    Not: "not",
    TrueNode: "true",
}


def evaluate(
    node: Query,
    leaf_evaluator: LeafEvaluator,
    scope: Scope,
    rerank_branch: BranchReranker | None = None,
    trace_fragments: int = 0,
) -> tuple[FragmentSet, dict[str, Any]]:
    """Evaluate ``node`` over ``scope``; return its fragments and the trace of the whole tree.

    ``trace_fragments`` > 0 lists each node's best fragments (``[chunk_id, document_id, score]``)
    in its trace record under ``top``.
    """
    return _Evaluator(leaf_evaluator, rerank_branch, trace_fragments).run(node, scope)


class _Evaluator:
    def __init__(self, leaf_evaluator: LeafEvaluator, rerank_branch: BranchReranker | None, trace_fragments: int = 0):
        self.leaf_evaluator = leaf_evaluator
        self.rerank_branch = rerank_branch
        self.trace_fragments = trace_fragments
        self.texts: dict[int, str] = {}  # serialise memo: each subtree written once for the trace

    def run(self, node: Query, scope: Scope) -> tuple[FragmentSet, dict[str, Any]]:
        started = time.perf_counter()
        children: list[dict[str, Any]] = []
        extra: dict[str, Any] = {}
        if isinstance(node, TrueNode):
            result = scope.filter_fragments(scope.document_ids, source="true")
        elif isinstance(node, (Semantic, Text, Category)):
            result = self.leaf(node, scope)
        elif isinstance(node, Not):
            operand, trace = self.run(node.operand, scope)
            children.append(trace)
            result = complement(operand, scope)
        elif isinstance(node, Or):
            operands = [self.branch(child, scope, children) for child in node.operands]
            result = combine_or(operands)
        elif isinstance(node, And):
            result, extra = self.conjunction(node, scope, children)
        else:
            raise TypeError(f"cannot evaluate {node!r}")
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        if self.trace_fragments > 0:
            extra["top"] = _listed_fragments(result, self.trace_fragments)
        return result, _trace(node, result, scope, elapsed_ms, children, extra, serialise(node, self.texts))

    def leaf(self, clause: Clause, scope: Scope) -> FragmentSet:
        is_filter = isinstance(clause, Category)
        answer = self.leaf_evaluator(clause, scope)
        if isinstance(answer, FragmentSet):  # e.g. a category index's lazy filter: cut by documents, not fragments
            if answer.is_filter != is_filter:
                answer = FragmentSet(answer.fragments, is_filter, answer.known_documents)
            return answer if scope.is_universe else answer.restricted_to(scope.document_ids)
        allowed = scope.document_ids
        return FragmentSet.of((f for f in answer if f.document_id in allowed), is_filter=is_filter)

    def branch(self, child: Query, scope: Scope, children: list[dict[str, Any]]) -> FragmentSet:
        """Evaluate one operand of an AND/OR, reranked with its own text when asked."""
        result, trace = self.run(child, scope)
        if self.rerank_branch is not None and not result.is_filter and len(result):
            started = time.perf_counter()
            text = serialise(child)
            result = FragmentSet.of(self.rerank_branch(text, result), is_filter=False)
            trace["branch_rerank"] = {
                "query": text,
                "elapsed_ms": round((time.perf_counter() - started) * 1000.0, 3),
                "top_scores": _top_scores(result),
            }
        children.append(trace)
        return result

    def conjunction(self, node: And, scope: Scope, children: list[dict[str, Any]]) -> tuple[FragmentSet, dict]:
        """Filters first; the rest run in the scope the filters leave (results in operand order)."""
        results: dict[int, FragmentSet] = {}
        traces: dict[int, dict[str, Any]] = {}
        narrowed = scope
        filters = [i for i, operand in enumerate(node.operands) if is_filter_only(operand)]
        order = filters + [i for i in range(len(node.operands)) if i not in filters]
        for i in order:
            collected: list[dict[str, Any]] = []
            results[i] = self.branch(node.operands[i], narrowed, collected)
            traces[i] = collected[0]
            if results[i].is_filter:
                narrowed = narrowed.restricted_to(results[i].document_ids)
        children.extend(traces[i] for i in range(len(node.operands)))
        result = combine_and([results[i] for i in range(len(node.operands))])
        return result, {"narrowed_scope_documents": len(narrowed.document_ids)}


def _top_scores(result: FragmentSet) -> list[float]:
    found = result.__dict__.get("_rounded_top_scores")
    if found is None:
        found = result.__dict__["_rounded_top_scores"] = [round(s, 6) for s in result.top_scores(TOP_SCORES_IN_TRACE)]
    return found


def _listed_fragments(result: FragmentSet, limit: int) -> list[list]:
    """``[[chunk_id, document_id, score], ...]`` of the best ``limit`` fragments; an unbuilt
    filter lists none (each of its documents' chunks scores 1.0: its document count says it all)."""
    if limit <= 0 or (isinstance(result.fragments, FilterFragments) and not result.fragments.built):
        return []
    key = ("_listed", limit)  # an AND that keeps its scored operand's set lists it again: list it once
    memo = memo_of(result)
    listed = memo.get(key)
    if listed is None:
        listed = memo[key] = [[f.id, f.document_id, round(f.score, 6)] for f in result.ranked(limit)]
    return listed  # shared by the records of one set: a trace is read, not edited


def _trace(
    node: Query,
    result: FragmentSet,
    scope: Scope,
    elapsed_ms: float,
    children: list[dict[str, Any]],
    extra: dict[str, Any],
    text: str,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "node": text,
        "type": _NODE_TYPES[type(node)],
        "fragments": len(result),
        "documents": len(result.document_ids),
        "top_scores": _top_scores(result),
        "is_filter": result.is_filter,
        "scope_documents": len(scope.document_ids),
        "elapsed_ms": round(elapsed_ms, 3),
        "children": children,
    }
    record.update(extra)
    return record


def tree_summary(record: dict[str, Any]) -> str:
    """One line for a trace record tree: each node's text, fragments, documents, best score and time,
    operands in brackets (``"a" AND CAT=x  3 fragments/2 docs best 0.57 0.9 ms [ ... ; ... ]``)."""
    if record["is_filter"]:
        counts = f"filter {record['documents']} docs"
    else:
        best = f" best {record['top_scores'][0]:.3g}" if record["top_scores"] else ""
        counts = f"{record['fragments']} fragments/{record['documents']} docs{best}"
    text = f"{record['node'] or 'TRUE'}  {counts} {record['elapsed_ms']:.1f} ms"
    if record["children"]:
        text += " [ " + " ; ".join(tree_summary(child) for child in record["children"]) + " ]"
    return text
