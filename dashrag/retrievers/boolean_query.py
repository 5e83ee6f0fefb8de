"""BooleanQueryRetriever: one query mixing meaning, exact text and metadata, answered at fragment level.

``retrieve('"asylum seeker" AND COUNTRY_OF_ORIGIN=IQ')`` parses the expression
(an empty query is TRUE: every fragment in scope), checks its category names
against the corpus (an unknown one is a ``QuerySyntaxError`` listing the known
names), evaluates it with the fragment algebra of :mod:`dashrag.boolean` (clauses
answered by :class:`~dashrag.boolean.leaves.ClauseRunner`: the child retriever for
semantic clauses, a text index for text clauses, a category index for category
clauses), then reranks and selects (:mod:`dashrag.boolean.output`). Category
restrictions reach the child before its top-k (a ``Restriction``), so a filter
truly excludes and top-k still returns k.

The caller's ``restriction`` keyword is the query's scope (NOT and TRUE never
reach outside it); ``top_k`` cuts the final list. ``score_chunks`` delegates to
the child: an expression has no single distance, the child's reading of the
text does. The trace's ``selection`` holds the syntax tree with each node's
fragments and timings, each clause's decisions, and the selection's.

The text index is this node's saved state; the category index and the scope are
rebuilt from the corpus on load (they hold nothing else).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal, Sequence

import numpy as np
from pydantic import Field

from dashrag.boolean.algebra import Scope
from dashrag.boolean.categories import validate_categories
from dashrag.boolean.category_index import CategoryIndex
from dashrag.boolean.evaluate import evaluate, tree_summary
from dashrag.boolean.leaves import (
    ClauseRunner,
    DocumentMaskRestriction,
    SemanticSettings,
    find_dense_node,
    reranker_function,
    resolve_score_mode,
)
from dashrag.boolean.output import select_output
from dashrag.boolean.parser import parse
from dashrag.boolean.rerank import RerankFunction, rerank_in_rounds
from dashrag.boolean.selection import SelectionThresholds
from dashrag.boolean.text_index import TextIndex
from dashrag.core import observe
from dashrag.core.ask import Ask
from dashrag.core.params import (
    ComponentParams,
    ComponentSpec,
    Rule,
    component_field,
    components_field,
    less_or_equal,
    spec,
)
from dashrag.core.registry import register
from dashrag.core.restriction import Restriction
from dashrag.core.retriever import Result, Retriever, SingleChildRetriever
from dashrag.documents.model import ScoredChunk
from dashrag.errors import QueryError, RetrievalError

_T = SelectionThresholds()  # the one place the selection defaults live
HYBRID = spec(
    "ParallelRetriever", children=[spec("BM25Retriever"), spec("DenseEmbeddingRetriever")], merge_strategy="rrf"
)


def _rerank_needs_reranker(params: BooleanQueryParams) -> str | None:
    if params.automatically_rerank and not params.reranker:
        return "automatically_rerank needs a reranker (set the reranker field)"
    return None


class BooleanQueryParams(ComponentParams):
    children: list[ComponentSpec] = components_field(
        "retriever",
        [HYBRID],
        min_length=1,
        max_length=1,
        description="The retriever that answers semantic clauses (default: the BM25 + dense hybrid).",
    )
    semantic_top_k: int = Field(
        200, ge=1, description="Fragments a semantic clause asks the child for (within its scope; the reference's 200)."
    )
    max_words_for_hybrid: int = Field(
        10,
        ge=0,
        description=(
            "Phrases of at most this many words use the whole child (dense and keyword search); "
            "longer ones the dense node only."
        ),
    )
    min_semantic_score: float = Field(
        0.10, description="Semantic hits scoring below this (see semantic_score) are dropped."
    )
    semantic_score: Literal["auto", "dense_cosine", "max_normalised", "child"] = Field(
        "auto",
        description=(
            "How a semantic hit is scored: dense_cosine (the child's dense node's similarity), max_normalised "
            "(child score / clause best), child (as the child scored it); "
            "auto: dense_cosine when the child has a dense node."
        ),
    )
    text_k1: float = Field(1.2, gt=0, description="BM25 k1 of the text clause's scores.")
    text_b: float = Field(0.75, ge=0, le=1, description="BM25 b of the text clause's scores.")
    min_document_score: float = Field(
        _T.min_document_score, description="Fast path: documents whose best fragment scores below this are dropped."
    )
    max_fragments_per_document: int = Field(
        _T.max_fragments_per_document, ge=1, description="Fast path: fragments kept per document."
    )
    top_m: int = Field(_T.top_m, ge=1, le=100_000, description="Fast path: fragments kept in all.")
    rerank_round_size: int = Field(
        _T.rerank_round_size, ge=1, description="Fragments per reranking round (larger inputs run in rounds)."
    )
    rerank_max_chars: int = Field(
        _T.rerank_max_chars, ge=1, description="Characters of a fragment's text the reranker reads."
    )
    min_score: float = Field(_T.min_score, description="Three-tier selection: fragments at or above this are kept.")
    fallback_top_n: int = Field(
        _T.fallback_top_n, ge=1, description="Three-tier selection: fragments taken when none reaches min_score."
    )
    min_documents: int = Field(
        _T.min_documents, ge=1, description="Three-tier selection: distinct documents to cover at least."
    )
    max_fragments: int = Field(
        _T.max_fragments, ge=1, description="Three-tier selection: the most fragments the diversity tier holds."
    )
    max_reranked_documents: int = Field(
        _T.max_reranked_documents, ge=1, le=10_000,
        description="After reranking: the most documents returned (the reference's MAX_RERANKING_OUTPUT_DOC, 10).")
    fill_up: bool = Field(
        False, description="Run the fill-up inside this component (the reference runs it as a separate, later step)."
    )
    fill_up_target_fragments: int = Field(
        _T.fill_up_target_fragments, ge=1, description="Fill-up: fragments to top a selection up to."
    )
    fill_up_max_chars: int = Field(
        _T.fill_up_max_chars, ge=1, description="Fill-up: character budget of the whole selection."
    )
    automatically_rerank: bool = Field(
        False, description="Rerank each AND/OR operand with its own text before combining."
    )
    reranker: ComponentSpec | None = component_field(
        "retriever",
        None,
        optional=True,
        description=(
            "The reranker (HttpReranker, CrossEncoderRetriever, any retriever): reranks the result with the "
            "query's semantic clauses; only its scoring is used, never its own children. None: no reranking."
        ),
    )
    return_documents: bool = Field(
        True,
        description="Return one entry per document (its best fragment) instead of fragments (the reference's default).",
    )
    trace_fragments: int = Field(10, ge=0, le=1_000, description="Fragments listed per syntax-tree node in the trace.")

    RULES = (
        less_or_equal("fallback_top_n", "max_fragments"),
        less_or_equal("min_documents", "max_reranked_documents"),
        Rule(
            "requires",
            ("automatically_rerank", "reranker"),
            "automatically_rerank needs a reranker",
            _rerank_needs_reranker,
            json_schema={
                "if": {"required": ["automatically_rerank"], "properties": {"automatically_rerank": {"const": True}}},
                "then": {"required": ["reranker"], "properties": {"reranker": {"minItems": 1}}},
            },
            at="reranker",
        ),
    )

    def thresholds(self) -> SelectionThresholds:
        return SelectionThresholds(**{name: getattr(self, name) for name in SelectionThresholds.__dataclass_fields__})


@register(
    kind="retriever",
    icon="Filter",
    category="composite",
    en=(
        "Boolean query",
        'Answers queries like "asylum seeker" AND COUNTRY=IQ: semantic, text and category clauses with AND/OR/NOT.',
    ),
    es=(
        "Consulta booleana",
        'Responde consultas como "solicitante de asilo" AND PAIS=IQ: '
        "cláusulas semánticas, de texto y de categoría con AND/OR/NOT.",
    ),
    representation={"en": "Boolean over [{children}]", "es": "Booleano sobre [{children}]"},
    operation="Parses the expression, answers semantic clauses with the child (restricted before top-k), "
    "text and category clauses with its indexes, combines fragments with AND/OR/NOT, then reranks and selects.",
)
class BooleanQueryRetriever(SingleChildRetriever[BooleanQueryParams]):
    @property
    def reranker(self) -> Retriever | None:
        return self.nested.get("reranker")

    # -- fitting and state ----------------------------------------------------
    def _fit(self) -> None:
        chunks = self.require_infra().chunks
        self._prepare(TextIndex.build(chunks.texts, k1=self.params.text_k1, b=self.params.text_b))

    def _prepare(self, text_index: TextIndex) -> None:
        chunks = self.require_infra().chunks
        self._text_index = text_index
        self._texts = chunks.texts
        self._universe = Scope.from_chunks(chunks.chunks)
        self._categories = CategoryIndex(
            chunks.document_ids, chunks.document_categories, chunks.document_sizes, universe=self._universe.universe
        )
        self._document_number = {d: i for i, d in enumerate(chunks.document_ids)}
        self._dense = find_dense_node(self.child)
        self._score_mode = resolve_score_mode(self.params.semantic_score, self._dense is not None)

    def _save(self, folder: Path) -> None:
        self._state().save(folder)

    def _load(self, folder: Path) -> None:
        self._prepare(TextIndex.load(folder, len(self.require_infra().chunks)))

    def _state(self) -> TextIndex:
        if getattr(self, "_text_index", None) is None:
            raise RetrievalError(f"{self.component_name}: not fitted (call init_model, or use dashrag.build / load)")
        return self._text_index

    # -- scope and restriction --------------------------------------------------
    def _scope(self, restriction: Restriction | None) -> Scope:
        if restriction is None:
            return self._universe
        chunks = self.require_infra().chunks
        mask = restriction.document_mask(chunks)
        return self._universe.restricted_to(d for d, ok in zip(chunks.document_ids, mask.tolist()) if ok)

    def _restriction_for(self, scope: Scope) -> Restriction | None:
        if scope.is_universe:
            return None
        chunks = self.require_infra().chunks
        documents = scope.document_ids
        mask = getattr(documents, "mask", None)  # an IndexedDocuments from this node's category index knows it
        if mask is None or getattr(documents, "universe", None) is not self._universe.universe:
            mask = np.zeros(len(chunks.document_ids), dtype=bool)
            mask[list(map(self._document_number.__getitem__, documents))] = True
        return DocumentMaskRestriction(documents, chunks, mask)

    # -- the retriever contract -------------------------------------------------
    def retrieve(self, query: str, *, top_k: int | None = None, filters: Any = None,
                 restriction: Restriction | None = None) -> tuple[Sequence[ScoredChunk], dict]:
        """Like every retriever's, except that an empty query is valid: it means TRUE."""
        ask = Ask.of(top_k, filters, restriction)
        if not isinstance(query, str):
            raise QueryError(f"a query must be a string, got {type(query).__name__}")
        if observe.observer is not None:
            return observe.observed(lambda: self._answer(query, ask), ask.top_k)
        return self._answer(query, ask)

    def retrieve_batch(self, queries: Sequence[str], *, top_k: int | None = None, filters: Any = None,
                       restriction: Restriction | None = None) -> Sequence[tuple[Sequence[ScoredChunk], dict]]:
        """One expression after another: each has its own tree, clauses and scope."""
        ask = Ask.of(top_k, filters, restriction)
        return [self.answer(q, ask) for q in queries]

    def _retrieve(self, query: str, ask: Ask) -> Result:
        self._state()
        p = self.params
        timings: dict[str, float] = {}
        started = time.perf_counter()
        tree = parse(query)
        validate_categories(tree, self._categories.names)
        timings["parse_ms"] = _ms(started)
        scope = self._scope(ask.restriction)
        runner = ClauseRunner(
            chunks=self.require_infra().chunks,
            texts=self._texts,
            child=self.child,
            dense=self._dense,
            text_index=self._text_index,
            categories=self._categories,
            semantic=SemanticSettings(p.semantic_top_k, p.max_words_for_hybrid, p.min_semantic_score, self._score_mode),
            restriction_for=self._restriction_for,
            base_scope=scope,
        )
        reranker = reranker_function(self.reranker) if self.reranker is not None else None
        branch = self._branch_reranker(reranker) if p.automatically_rerank and reranker is not None else None
        started = time.perf_counter()
        result, tree_trace = evaluate(tree, runner, scope, rerank_branch=branch, trace_fragments=p.trace_fragments)
        timings["evaluate_ms"] = _ms(started)
        started = time.perf_counter()
        output, decisions = select_output(tree, result.ranked(), p.thresholds(), p.return_documents, reranker,
                                          only_filters=result.is_filter, run_fill_up=p.fill_up)
        timings["select_ms"] = _ms(started)
        name = self.component_name
        output = [ScoredChunk(f.chunk, f.score, name, {**f.provenance, "clause_source": f.source}) for f in output]
        if ask.top_k is not None:
            output = output[:ask.top_k]
        selection = {
            "summary": (
                f"{decisions['path']} path, {len(output)} {'documents' if p.return_documents else 'fragments'} "
                f"returned | {tree_summary(tree_trace)}"
            ),
            "expression": query,
            "scope_documents": len(scope.document_ids),
            "tree": tree_trace,
            "clauses": runner.clauses,
            "decisions": decisions,
            "timings": timings,
        }
        return output, runner.child_traces, selection

    def _branch_reranker(self, rerank: RerankFunction) -> Any:
        t = self.params.thresholds()

        def rerank_branch(text: str, fragments: Any) -> list[ScoredChunk]:
            ranked, _ = rerank_in_rounds(
                text,
                fragments.ranked(),
                rerank,
                t.rerank_round_size,
                t.rerank_max_chars,
                source="branch_rerank",
            )
            return ranked

        return rerank_branch

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """The child's distances: an expression has no single distance; the child's reading of the text does."""
        return self.child.score_chunks(chunk_ids, query)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)
