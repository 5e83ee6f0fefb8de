"""What an engine stores beside a chunk so that it can evaluate filters itself: a document's metadata typed.

``{"fields": {name: [numbers, strings, booleans]}, "dates": {name: [seconds since 1970]},
"present": [names]}``: every value a list (so "any element matches" is the engine's array
rule), dates apart as numbers (so the engine compares instants, not text), and the fields
that exist listed (``$exists``). The same typing as the in-process columns (``values.py``),
so an engine and the mask agree on every document.
"""

from __future__ import annotations

from typing import Any, Mapping

from dashrag.filters.values import comparable


def filter_payload(metadata: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, list[Any]] = {}
    dates: dict[str, list[float]] = {}
    present: list[str] = []
    for name, raw in metadata.items():
        items = raw if isinstance(raw, (list, tuple)) else (raw,)
        if any(item is not None for item in items):
            present.append(name)
        for item in items:
            value = comparable(item)
            if value is None:
                continue
            if value.kind == "date":
                dates.setdefault(name, []).append(float(value.key))
            else:
                fields.setdefault(name, []).append(value.raw)
    return {"fields": fields, "dates": dates, "present": present}
