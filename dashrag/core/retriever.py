"""The retriever contract (docs/design.md) and its two shapes: leaves and composites.

``retrieve(query, *, top_k=None, filters=None) -> (chunks, trace)``: chunks best first,
higher score better; the trace is a JSON-ready node. ``score_chunks(ids, query)`` gives
*distances* (lower is better, ascending) for chunks a caller already holds, so any
retriever can be a later stage of a cascade. The keywords (core/ask.py):

* ``top_k``: how many chunks (a positive integer), overriding the configured ``top_k``;
  what a parent sets for its children;
* ``filters``: a metadata filter (docs/filters.md), applied by every leaf before its
  top-k (pre-filter: the top-k of the unfiltered ranking restricted to matches, same
  scores) and passed down by composites;
* ``restriction``: a :class:`Restriction` (allowed documents, a parsed filter), how
  composites and the boolean query hand the filter on; both must hold.

Components see one frozen :class:`~dashrag.core.ask.Ask` instead of keywords.

The template methods here do the shared work (query checks, timing, trace nodes,
dedup of ids, batch splitting), so a component implements only its scoring.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, Protocol, Sequence, TypeVar, cast, overload

import numpy as np

from dashrag.core import observe
from dashrag.core.ask import Ask
from dashrag.core.collection import young_garbage_only
from dashrag.core.component import ConfigObject
from dashrag.core.params import ComponentParams
from dashrag.core.ranking import by_distance, top_k_above
from dashrag.core.trace import TraceSettings, trace_node
from dashrag.documents.model import ScoredChunk, SourceDocument
from dashrag.documents.scored_chunks import ScoredChunks
from dashrag.documents.windows import ChunkSetLookup, expand_retrieved_chunks, merge_expanded_chunks
from dashrag.errors import BatchQueryError, ConfigError, DashragError, PersistenceError, QueryError

if TYPE_CHECKING:  # the filter language and the update path are imported where they are used, not by every query
    from dashrag.core.restriction import Restriction
    from dashrag.documents.changes import UpdateReport
    from dashrag.documents.chunk_set import ChunkSet

P = TypeVar("P", bound=ComponentParams)


class _TopKParams(Protocol):
    top_k: int  # every leaf's params, and every re-scoring composite's, declare how many chunks to return


class _FetchParams(Protocol):
    fetch_k: int | None


Result = tuple[Sequence[ScoredChunk], list[dict], dict | None]  # chunks, children's trace nodes, selection
Answer = tuple[Sequence[ScoredChunk], dict]  # chunks best first, trace node


class BatchAnswers(Sequence[Answer]):
    """``retrieve_batch``'s answer: one ``(chunks, trace node)`` per query, the node built
    each time its query's answer is read, and not kept. A batch of cheap queries spent
    most of its time and memory on trace nodes nobody read (bench/bench_bm25_end_to_end.py);
    a caller that reads an answer gets its node, with the query's share of the batch's time,
    and equal nodes on every read. :meth:`results` gives the chunks alone."""

    __slots__ = ("_queries", "_results", "_share_ms", "_node")

    def __init__(self, queries: list[str], results: list[Result], share_ms: float,
                 node: Callable[..., dict]):
        self._queries, self._results, self._share_ms, self._node = queries, results, share_ms, node

    def __len__(self) -> int:
        return len(self._queries)

    def _answer(self, i: int) -> Answer:
        chunks, children, selection = self._results[i]
        return chunks, self._node(self._queries[i], chunks, self._share_ms, children, selection, batched=True)

    @overload
    def __getitem__(self, index: int) -> Answer: ...

    @overload
    def __getitem__(self, index: slice) -> list[Answer]: ...

    def __getitem__(self, index: int | slice) -> Answer | list[Answer]:
        if isinstance(index, slice):
            return [self._answer(i) for i in range(len(self))[index]]
        return self._answer(range(len(self))[index])

    def __iter__(self) -> Iterator[Answer]:
        return (self._answer(i) for i in range(len(self)))

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (BatchAnswers, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def results(self) -> list[Sequence[ScoredChunk]]:
        """Every query's chunks, without building trace nodes."""
        return [chunks for chunks, _, _ in self._results]


def check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise QueryError(f"a query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise QueryError("the query is empty")
    return query


class _ClassOrInstance:
    """A method that is a classmethod on the class and an instance method on an instance: ``Retriever.load(folder)``
    returns the loaded tree (dashrag's), ``retriever.load(folder)`` restores this one in place (the reference's)."""

    def __init__(self, on_class: str, on_instance: str):
        self.on_class, self.on_instance = on_class, on_instance

    def __get__(self, instance: Any, owner: type) -> Callable[..., Any]:
        return getattr(owner, self.on_class) if instance is None else getattr(instance, self.on_instance)


class Retriever(ConfigObject[P], Generic[P]):
    trace_settings: TraceSettings
    #: Most queries per ``retrieve_batch`` call in :meth:`stream_batch`. A component that spends
    #: seconds on each query (an LLM call) sets 1, so every answer is handed out as soon as it exists.
    stream_block: int = 64

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.trace_settings = TraceSettings()
        self._record_id: int | None = None

    # -- public contract ----------------------------------------------------
    def retrieve(self, query: str, *, top_k: int | None = None, filters: Any = None,
                 restriction: Restriction | None = None) -> Answer:
        ask = Ask.of(top_k, filters, restriction)
        query = check_query(query)
        if observe.observer is not None:  # OpenTelemetry export (core/observe.py); off: this one read
            return observe.observed(lambda: self._answer(query, ask), ask.top_k)
        return self._answer(query, ask)

    def _answer(self, query: str, ask: Ask) -> Answer:
        start = time.perf_counter()
        chunks, children, selection = self._retrieve(query, ask)
        return chunks, self._node(query, chunks, (time.perf_counter() - start) * 1000, children, selection,
                                  **ask.traced())

    def answer(self, query: str, ask: Ask) -> Answer:
        """``retrieve`` with an :class:`Ask` a parent already checked (how composites ask their children)."""
        return self.retrieve(query, top_k=ask.top_k, restriction=ask.restriction)

    def answer_batch(self, queries: Sequence[str], ask: Ask) -> Sequence[Answer]:
        return self.retrieve_batch(queries, top_k=ask.top_k, restriction=ask.restriction)

    def retrieve_batch(self, queries: Sequence[str], *, top_k: int | None = None, filters: Any = None,
                       restriction: Restriction | None = None) -> Sequence[Answer]:
        """Answer many queries; leaves do it in one vectorised pass. Each query gets its own trace
        (built when its answer is read, see :class:`BatchAnswers`); its ``elapsed_ms`` is its share
        of the batch's time. Automatic garbage collection is paused for the batch and its young
        garbage swept at the end (core/collection.py)."""
        ask = Ask.of(top_k, filters, restriction)
        queries = [check_query(q) for q in queries]
        if not queries:
            return BatchAnswers([], [], 0.0, self._node)
        if observe.observer is not None:
            return observe.observed_batch(lambda: self._answer_batch(queries, ask), ask.top_k)
        return self._answer_batch(queries, ask)

    def _answer_batch(self, queries: list[str], ask: Ask) -> BatchAnswers:
        with young_garbage_only() as sweep:  # see core/collection.py: a fifth of a fused batch's time
            start = time.perf_counter()
            results = self._retrieve_batch(queries, ask)
            share = (time.perf_counter() - start) * 1000 / len(queries)
            sweep()
        return BatchAnswers(queries, results, share, partial(self._node, **ask.traced()))

    def stream_batch(self, queries: Sequence[str], *, query_ids: Sequence[str] | None = None,
                     top_k: int | None = None, filters: Any = None,
                     restriction: Restriction | None = None) -> Iterator[tuple[int, Sequence[ScoredChunk], dict]]:
        """Answer ``queries`` in order, yielding ``(index, chunks, trace)`` as answers are made.

        Why: a long batch must not lose finished work when one query fails (a backend that
        stops answering part-way). Queries go through :meth:`retrieve_batch` in blocks of
        the smallest ``stream_block`` in the tree, so a tree with an LLM stage yields every
        answer as soon as it exists, and a cheap tree keeps its vectorised blocks. When a
        block fails with a DashragError, its queries are answered again one at a time, so
        the answers before the failing query are still yielded; then
        :class:`~dashrag.errors.BatchQueryError` names that query (``query_ids[i]``, or its
        1-based position). (A failure that does not repeat query by query is no failure:
        the block's answers are yielded and the batch goes on.) Other exceptions (bugs)
        propagate as they are.
        """
        ask = Ask.of(top_k, filters, restriction)  # a bad filter is refused before any query runs
        queries = [check_query(q) for q in queries]
        names = [str(i + 1) for i in range(len(queries))] if query_ids is None else [str(q) for q in query_ids]
        if len(names) != len(queries):
            raise QueryError(f"{len(names)} query ids for {len(queries)} queries")
        block = max(1, min(node.stream_block for _, node in self.iter_nodes() if isinstance(node, Retriever)))
        for start in range(0, len(queries), block):
            part = queries[start:start + block]
            try:
                answers = self.answer_batch(part, ask)
            except DashragError as exc:
                if len(part) == 1:
                    raise BatchQueryError(start + 1, len(queries), names[start], exc) from exc
                answers = None
            if answers is not None:
                for offset, (chunks, node) in enumerate(answers):
                    yield start + offset, chunks, node
                continue
            for offset, query in enumerate(part):  # the block failed: one at a time, to keep what answers
                i = start + offset
                try:
                    [(chunks, node)] = self.answer_batch([query], ask)
                except DashragError as exc:
                    raise BatchQueryError(i + 1, len(queries), names[i], exc) from exc
                yield i, chunks, node

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        """``[(chunk_id, distance)]`` ascending; an unknown id raises UnknownChunkError."""
        raise NotImplementedError

    def top_k(self, ask: Ask) -> int:
        """How many chunks to return: the call's (or a parent's) ``top_k``, else the configured ``top_k``."""
        return ask.top_k if ask.top_k is not None else int(cast(_TopKParams, self.params).top_k)

    def save(self, folder: Any) -> Any:
        """Save this fitted tree to ``folder`` (see :func:`dashrag.core.saved_tree.save`)."""
        from dashrag.core.saved_tree import save  # saved_tree builds Retrievers: imported when used

        return save(self, folder)

    def update_documents(self, add: Iterable[SourceDocument] = (), remove: Iterable[str] = (),
                         chunker: dict[str, Any] | None = None, purge: bool = False) -> UpdateReport:
        """Add, replace (changed content) or skip (identical) ``add`` and remove the documents ``remove``, in one
        change; every node answers afterwards as if built on the resulting documents. ``save`` publishes it
        (docs/updating.md; :func:`dashrag.core.updating.update_documents`; ``purge``: there)."""
        from dashrag.core.updating import update_documents  # the store and the chunker: imported when used

        return update_documents(self, add, remove, chunker, purge)

    def add_documents(self, documents: Iterable[SourceDocument], chunker: dict[str, Any] | None = None
                      ) -> UpdateReport:
        """Add ``documents`` (a Corpus or SourceDocuments); one whose id is in the tree is replaced when its
        content changed and skipped when identical."""
        return self.update_documents(add=documents, chunker=chunker)

    def remove_documents(self, document_ids: Iterable[str]) -> UpdateReport:
        """Remove these documents (an unknown id is a ConfigError and nothing changes)."""
        return self.update_documents(remove=document_ids)

    @classmethod
    def _load_tree(cls, folder: Any) -> Retriever:
        """Load a tree saved with :meth:`save` (:func:`dashrag.core.saved_tree.load`); its root must be a ``cls``."""
        from dashrag.core.saved_tree import load  # saved_tree builds Retrievers: imported when used

        root = load(folder)
        if not isinstance(root, cls):
            root.close()
            raise PersistenceError(f"{folder}: holds a {root.component_name}, not a {cls.component_name}")
        return root

    def _load_in_place(self, folder: Any) -> None:
        """The reference's ``retriever.load(filename)``: this tree's state restored from ``folder`` (saved from a
        tree of the same config), nothing returned. The nodes keep their identity; a folder holding another
        config is a PersistenceError and leaves this tree as it was."""
        loaded = type(self)._load_tree(folder)
        if loaded.to_config() != self.to_config():
            loaded.close()
            raise PersistenceError(f"{folder}: holds another config than this {self.component_name}'s; "
                                   f"load it with {type(self).__name__}.load(folder)")
        for (_, mine), (_, theirs) in zip(self.iter_nodes(), loaded.iter_nodes()):
            mine.__dict__.update({key: value for key, value in theirs.__dict__.items() if key != "nested"})

    load = _ClassOrInstance("_load_tree", "_load_in_place")

    # -- the store's retriever record -----------------------------------------
    def get_id(self) -> int | None:
        """The id of this tree's retriever record in the store (None until one is recorded)."""
        return self._record_id

    def set_id(self, record_id: int) -> None:
        """Tie this tree to the store's retriever record ``record_id``; with a store injected, an id the store
        lacks is refused; with none, the id is assigned as given (the reference's ``set_id``)."""
        from dashrag.store.store import Store

        url = self.infra.store_url if self.infra is not None else None
        if url is None:
            self._record_id = record_id
            return
        store = Store(url)
        try:
            if store.retriever_record(record_id) is None:
                raise PersistenceError(f"the store {store.display_url} has no retriever record {record_id}")
        finally:
            store.close()
        self._record_id = record_id

    # -- neighbour windows ----------------------------------------------------
    def expand_retrieved_chunks(self, chunks: Sequence[ScoredChunk], window_size: int) -> list[ScoredChunk]:
        """Each distinct chunk widened to ``window_size`` chunks of its document (itself included):
        odd sizes centred on it, even sizes with the extra chunk after it (documents/windows.py); windows
        that overlap are merged here already, as the reference's method does (``merge_expanded_chunks``
        on the result changes nothing)."""
        lookup = ChunkSetLookup(self.require_infra().chunks)
        return merge_expanded_chunks(expand_retrieved_chunks(chunks, window_size, lookup), lookup)

    def merge_expanded_chunks(self, chunks: Sequence[ScoredChunk]) -> list[ScoredChunk]:
        """Windows of a document that share a chunk become one concatenated chunk, best hit first;
        touching windows and plain chunks come back as they are."""
        return merge_expanded_chunks(chunks, ChunkSetLookup(self.require_infra().chunks))

    def get_children(self) -> list[Retriever]:
        """The retrievers nested in this one (a copy: changing it changes nothing)."""
        return [node for _, node in self.nested_objects() if isinstance(node, Retriever)]

    def set_trace_settings(self, *, include_text: bool | None = None, max_output: int | None = None) -> None:
        """Change what traces record, for this node and every node below it."""
        for _, node in self.iter_nodes():
            if isinstance(node, Retriever):
                if include_text is not None:
                    node.trace_settings.include_text = include_text
                node.trace_settings.max_output = max_output

    # -- for subclasses -----------------------------------------------------
    def _retrieve(self, query: str, ask: Ask) -> Result:
        raise NotImplementedError

    def _retrieve_batch(self, queries: list[str], ask: Ask) -> list[Result]:
        return [self._retrieve(q, ask) for q in queries]

    def _node(self, query: str, chunks: Sequence[ScoredChunk], elapsed_ms: float, children: list[dict],
              selection: dict | None, **extra: Any) -> dict:
        return trace_node(component=self.component_name, params=self.own_params(), query=query,
                          elapsed_ms=elapsed_ms, output=chunks, settings=self.trace_settings,
                          children=children, selection=selection, **extra)


class UnitRetriever(Retriever[P], Generic[P]):
    """A leaf that scores every chunk of the corpus; the base ranks, restricts and traces.

    A subclass implements ``_fit`` and ``_score_block(queries) -> (n_queries, n_chunks)``
    native scores (higher is better), and may override ``to_distance`` (default:
    the negated score) and ``hit_floor`` / ``_score_and_floor`` (which chunks count
    as a hit at all: a keyword retriever returns no chunk that shares no query term).
    A hit scores above its query's floor, so every hit ranks above every miss: the
    k best are selected over all allowed chunks and the misses trimmed from the end,
    which is the same answer as selecting among the hits, without a mask per query.
    """

    query_block = 256  # at most this many queries scored per block of a batch
    block_cells = 1 << 16  # ... and at most about this many scores, so a block stays in cache

    def _score_block(self, queries: list[str]) -> np.ndarray:
        raise NotImplementedError

    hit_floor = -np.inf  # a chunk is a hit when its score is above this (non-finite scores never are)

    def _score_and_floor(self, queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Scores of a block of queries and each query's hit floor; override when the floor
        depends on the query."""
        return self._score_block(queries), np.full(len(queries), self.hit_floor)

    def to_distance(self, scores: np.ndarray) -> np.ndarray:
        return -scores

    def _encode_queries(self, queries: list[str]) -> Any:
        """The whole batch in the form ``_score_and_floor`` scores, sliced by rows into blocks
        (default: the texts). A leaf that analyzes queries overrides it to do so once per batch."""
        return queries

    def _allowed(self, ask: Ask) -> np.ndarray | None:
        return None if ask.restriction is None else ask.restriction.row_mask(self.require_infra().chunks)

    def _retrieve(self, query: str, ask: Ask) -> Result:
        return self._retrieve_batch([query], ask)[0]

    def _retrieve_batch(self, queries: list[str], ask: Ask) -> list[Result]:
        chunks = self.require_infra().chunks
        k, allowed = self.top_k(ask), self._allowed(ask)
        results: list[Result] = []
        per_block = max(1, min(self.query_block, self.block_cells // len(chunks)))
        encoded = self._encode_queries(queries)
        for start in range(0, len(queries), per_block):
            block, floors = self._score_and_floor(encoded[start:start + per_block])
            for scores, floor in zip(block, floors.tolist()):
                results.append((self._hits(chunks, scores, floor, k, allowed), [], None))
        return results

    def _hits(self, chunks: ChunkSet, scores: np.ndarray, floor: float, k: int, allowed: np.ndarray | None = None,
              rows: np.ndarray | None = None) -> ScoredChunks:
        """One query's k best ``scores`` that are hits (above ``floor``), as chunks; ``rows``: the chunk rows the
        scores stand for (None: every row, in order)."""
        picked = top_k_above(scores, k, floor, allowed)
        values = scores[picked]
        hits = int(np.count_nonzero(values > floor))  # (every row picked is above the floor)
        return ScoredChunks(chunks, picked[:hits] if rows is None else rows[picked[:hits]], values[:hits],
                            self.component_name)

    def score_chunks(self, chunk_ids: Sequence[int], query: str) -> list[tuple[int, float]]:
        query = check_query(query)
        rows = self.require_infra().chunks.rows_of(chunk_ids)
        distances = self.to_distance(self._score_block([query])[0][rows])
        return by_distance(chunk_ids, rows, distances)


class CompositeRetriever(Retriever[P], Generic[P]):
    """A retriever that owns child retrievers (``params.children``) and combines their work."""

    def add(self, child: Retriever) -> None:
        self.nested.setdefault("children", []).append(child)

    def remove(self, child: Retriever) -> Retriever:
        """Remove ``child`` (the object itself, as the reference takes it) and return it."""
        children = self.nested.get("children", [])
        for i, existing in enumerate(children):
            if existing is child:
                return children.pop(i)
        name = getattr(child, "component_name", child)
        raise ConfigError(f"{self.component_name}: {name!r} is not one of its children")


class SingleChildRetriever(CompositeRetriever[P], Generic[P]):
    """A composite with exactly one child retriever (``params.children``, one entry), fixed when
    it is built: the cross-encoder, MMR, the agentic reranker, the boolean query.

    It owns ``child`` and the fetch-then-rescore pattern: the child is asked for ``fetch_size``
    candidates (once for a whole batch) and ``_rescore`` turns each query's candidates into its
    result. A component that uses its child otherwise (the boolean query asks it per clause)
    overrides ``_retrieve`` / ``_retrieve_batch`` and keeps ``child``.
    """

    @property
    def child(self) -> Retriever:
        return self.nested["children"][0]

    def add(self, child: Retriever) -> None:
        raise ConfigError(
            f"{self.component_name} has exactly one child, fixed when it is built; "
            "build a new tree to use another child"
        )

    def remove(self, child: Retriever) -> Retriever:
        raise ConfigError(f"{self.component_name} cannot remove its child; build a new tree instead")

    def fetch_size(self, ask: Ask) -> int | None:
        """How many candidates to ask the child for: ``fetch_k``, or more when more are to be returned;
        None (``fetch_k`` unset): as many as the child returns by itself."""
        fetch_k = cast(_FetchParams, self.params).fetch_k
        return None if fetch_k is None else max(int(fetch_k), self.top_k(ask))

    def _child_ask(self, ask: Ask) -> Ask:
        """The call for the child: the restriction passes down; ``top_k`` is this node's to set."""
        return ask.with_top_k(self.fetch_size(ask))

    def _retrieve(self, query: str, ask: Ask) -> Result:
        answer = self.child.answer(query, self._child_ask(ask))
        return self._rescore([query], [answer], ask)[0]

    def _retrieve_batch(self, queries: list[str], ask: Ask) -> list[Result]:
        answers = self.child.answer_batch(queries, self._child_ask(ask))  # one pass of the child
        return self._rescore(queries, answers, ask)

    def _rescore(self, queries: list[str], answers: Sequence[Answer], ask: Ask) -> list[Result]:
        """Each query's result from the child's answer to it (chunks best first, and its trace node)."""
        raise NotImplementedError
