"""The data every component passes around: source documents, chunks, scored chunks.

Chunks are addressed two ways (docs/design.md): by an integer ``id`` that is unique in a
corpus, and by ``(document_id, position)`` with positions 0-based and contiguous per
document. Dedup everywhere uses the integer id, so a chunk reached through two
children of a fusion is still one chunk.

Metadata is any JSON object a corpus gives a document (strings, numbers, booleans,
lists, ISO dates as strings); it travels with every chunk of the document and every
hit, and metadata filters (``dashrag/filters``) run over it. *Categories* are its
string and list-of-string fields seen as sets (``normalise_categories``), so the boolean
language's ``COUNTRY=IQ,SY`` is a set test whatever the corpus format was.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

Categories = Mapping[str, tuple[str, ...]]
Metadata = Mapping[str, Any]  # a JSON object: a document's fields


def json_metadata(raw: Any, where: str) -> dict[str, Any]:
    """``raw`` as a document's metadata: a JSON object (None: none); anything else is a ValueError naming ``where``.

    Why: metadata is stored as JSON and filtered by value, so a NaN, a set or an object key that is not a
    string would be stored as something else than what the user sent, or not at all.
    """
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a JSON object, not {type(raw).__name__}")
    _check_json(raw, where)
    return dict(raw)


def _check_json(value: Any, where: str) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where}: metadata keys must be strings, not {type(key).__name__}")
            _check_json(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]")
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{where}: {value} is not a JSON number")
    elif value is not None and not isinstance(value, (str, int, bool)):
        raise ValueError(f"{where}: {type(value).__name__} is not a JSON value")


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
    metadata: Metadata = field(default_factory=dict)
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
    metadata: Metadata = field(default_factory=dict)  # its document's
    fields: Metadata = field(default_factory=dict)  # its own: where in the document it starts (page, section)

    @property
    def all_metadata(self) -> Metadata:
        """Its document's metadata with its own fields over it: what a hit shows and a filter tests.

        Why two parts: the document's metadata is stored once per document (a 300-page PDF's ``path`` is not
        repeated 900 times), a chunk's ``page`` and ``section`` once per chunk (docs/documents.md).
        """
        return {**self.metadata, **self.fields} if self.fields else self.metadata


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

    def to_json(self, include_text: bool = True, include_metadata: bool = False) -> dict[str, Any]:
        """The hit as JSON; ``include_metadata``: with its document's metadata and its own fields (page,
        section: what answers to users carry; traces leave it out, every node would repeat it)."""
        out: dict[str, Any] = {
            "chunk_id": self.chunk.id,
            "document_id": self.chunk.document_id,
            "position": self.chunk.position,
            "score": self.score,
            "source": self.source,
        }
        if include_text:
            out["text"] = self.chunk.text
        if include_metadata:
            out["metadata"] = dict(self.chunk.all_metadata)
        if self.provenance:
            out["provenance"] = dict(self.provenance)
        return out
