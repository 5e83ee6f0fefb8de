"""Step 10b: the citations and the low-confidence flag of an assembled context."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence


def citations(source_ids: Iterable[str | None]) -> list[str]:
    """The sorted set of the kept chunks' non-null source ids."""
    return sorted({s for s in source_ids if s is not None})


def cited_places(kept: Iterable[tuple[str | None, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Where the kept chunks' text is, for a reader to open: per ``(source id, metadata)`` of a kept chunk, its
    file's ``path``, the PDF ``page`` and the ``section`` (null where the chunk has none), each place once, in
    context order. Why beside ``citations``: a source id names a document; a user opens a file at a page."""
    places: list[dict[str, Any]] = []
    for source_id, metadata in kept:
        place = {"source_id": source_id, "path": _typed(metadata, "path", str), "page": _typed(metadata, "page", int),
                 "section": _typed(metadata, "section", str)}
        if source_id is not None and place not in places:
            places.append(place)
    return places


def _typed(metadata: Mapping[str, Any], name: str, kind: type) -> Any:
    value = metadata.get(name)
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def low_confidence(kept: Sequence[object]) -> bool:
    """True exactly when no chunk was kept."""
    return len(kept) == 0
