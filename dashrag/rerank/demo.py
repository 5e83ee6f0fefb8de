"""The small built-in candidate set ``dashrag rerank QUERY`` reranks when given no tree: a smoke run of a backend
(the reference's ``ragctl rerank`` local smoke), short texts about retrieval, each a chunk with an id."""

from __future__ import annotations

from dashrag.rerank.types import Chunk, MemoryHydrator

DEMO_TEXTS = (
    "A cross-encoder reads the query and a passage together and outputs one relevance score.",
    "Reciprocal rank fusion merges several ranked lists by summing one over each rank plus a constant.",
    "Maximal marginal relevance trades relevance against similarity to the passages already chosen.",
    "BM25 weighs a term by its frequency in the passage, saturated, and its rarity in the corpus.",
    "A dense retriever embeds queries and passages separately and compares the vectors by cosine.",
    "A two-stage cascade narrows candidates cheaply, then rescores the few that remain precisely.",
)


def demo_hydrator() -> MemoryHydrator:
    """The demo chunks (``chunk-0`` ...), each with a first-stage score of 1.0."""
    return MemoryHydrator([Chunk(f"chunk-{i}", text, 1.0) for i, text in enumerate(DEMO_TEXTS)])
