"""The data every component passes around: source documents, chunks, scored chunks.

Chunks are addressed two ways (docs/design.md): by an integer ``id`` that is unique in a
corpus, and by ``(document_id, position)`` with positions 0-based and contiguous per
document. Dedup everywhere uses the integer id, so a chunk reached through two
children of a fusion is still one chunk.

Metadata is *categories*: a category name maps to a tuple of string values, so a
filter such as ``COUNTRY=IQ,SY`` is a set test, whatever the corpus format was.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

Categories = Mapping[str, tuple[str, ...]]


def normalise_categories(raw: Mapping[str, Any] | None) -> dict[str, tuple[str, ...]]:
    """Turn ``{"k": "v"}`` / ``{"k": ["v", "w"]}`` into ``{"k": ("v",)}`` / ``{"k": ("v", "w")}``.

    Values that are neither strings nor lists of strings (BEIR SciFact keeps
    structured evidence there) are not categories and are left out.
    """
    categories: dict[str, tuple[str, ...]] = {}
    for name, value in (raw or {}).items():
        if isinstance(value, str):
            categories[str(name)] = (value,)
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            categories[str(name)] = tuple(value)
    return categories


@dataclass(frozen=True)
class SourceDocument:
    """One document of a corpus, as read from a file or a JSONL line."""

    id: str
    text: str
    title: str = ""
    metadata: Categories = field(default_factory=dict)
    source: str = ""  # where it was read from (a path), for error messages


@dataclass(frozen=True)
class Chunk:
    """A piece of one document; ``start``/``end`` are character offsets into its text."""

    id: int
    document_id: str
    position: int
    text: str
    start: int = 0
    end: int = 0
    metadata: Categories = field(default_factory=dict)


@dataclass(frozen=True)
class ScoredChunk:
    """A chunk as a retriever returns it: higher ``score`` is better.

    ``source`` names the component that produced the score; ``provenance`` keeps
    what a composite knows about how the chunk got here (each child's rank and raw
    score, say), so a fused score never hides its parts.
    """

    chunk: Chunk
    score: float
    source: str
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> int:
        return self.chunk.id

    @property
    def document_id(self) -> str:
        return self.chunk.document_id

    def rescored(self, score: float, source: str, **provenance: Any) -> ScoredChunk:
        merged = {**self.provenance, **provenance}
        return replace(self, score=float(score), source=source, provenance=merged)

    def to_json(self, include_text: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "chunk_id": self.chunk.id,
            "document_id": self.chunk.document_id,
            "position": self.chunk.position,
            "score": self.score,
            "source": self.source,
        }
        if include_text:
            out["text"] = self.chunk.text
        if self.provenance:
            out["provenance"] = dict(self.provenance)
        return out
