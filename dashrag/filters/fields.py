"""The fields a corpus's metadata holds, as a user choosing a filter needs them.

``unknown_field_warnings``: a filter that names a field no document has matches nothing, by the
language's rules (docs/filters.md); an empty answer then looks like "nothing relevant" when the
field was misspelt (``{"yaer": 2024}``). Every face shows these lines beside the answer (the
answer itself stays empty: the filter meant what it said).

``field_summaries``: each field with the kinds of value it holds, how many documents have it, and its
most frequent values: what ``dashrag fields``, ``GET /trees/{name}/fields`` and the page's filter box
offer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from dashrag.filters.ast import And, Filter, Not, Or
from dashrag.filters.columns import MetadataColumns
from dashrag.filters.values import comparable

EXAMPLES = 5  # values shown per field: enough to see their form, few enough for one line


def named_fields(node: Filter) -> Iterator[tuple[str, str]]:
    """Each (field, path in the filter) a filter names, in the order written."""
    if isinstance(node, Not):
        yield from named_fields(node.part)
    elif isinstance(node, (And, Or)):
        for part in node.parts:
            yield from named_fields(part)
    else:
        yield node.field, node.path


def unknown_field_warnings(node: Filter, columns: MetadataColumns) -> list[str]:
    """One line per field the filter names that no document of the corpus has, listing the fields there are."""
    known = sorted(columns.fields)
    there = f"the fields are: {', '.join(known)}" if known else "no document has any metadata"
    first: dict[str, str] = {}
    for field, path in named_fields(node):
        first.setdefault(field, path)
    return [f"the filter's field {field!r} ({path}) is in no document, so it matches nothing; {there}"
            for field, path in first.items() if field not in columns.fields]


def field_summaries(metadata: Sequence[Mapping[str, Any]], examples: int = EXAMPLES,
                    chunk_fields: Iterable[tuple[str, Mapping[str, Any]]] = ()) -> list[dict[str, Any]]:
    """Per field (by name): ``types`` (number, date, string, bool; ``list`` when some value is a list),
    ``documents`` (how many have it, null aside) and ``values`` (the most frequent, at most ``examples``).

    ``chunk_fields``: ``(document id, fields)`` of each chunk with its own fields (page, section), filterable
    like the documents' metadata; such a field's ``documents`` counts the documents with a chunk that has it."""
    kinds: dict[str, set[str]] = {}
    counts: dict[str, int] = Counter()
    values: dict[str, Counter[tuple[str, Any]]] = {}  # by kind too: True and 1 are equal keys
    holders: dict[str, set[str]] = {}

    def gather(fields: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
        for name, raw in fields.items():
            items = raw if isinstance(raw, list) else [raw]
            found = [value for value in map(comparable, items) if value is not None]
            held = kinds.setdefault(name, set())
            held.update({v.kind for v in found} | ({"list"} if isinstance(raw, list) else set()))
            values.setdefault(name, Counter()).update((v.kind, v.raw) for v in found)
            yield name, any(item is not None for item in items)

    for fields in metadata:
        for name, present in gather(fields):
            counts[name] += present
    for document_id, fields in chunk_fields:
        for name, present in gather(fields):
            if present:
                holders.setdefault(name, set()).add(document_id)
    for name, documents in holders.items():
        counts[name] = max(counts[name], len(documents))
    return [{"name": name, "types": sorted(kinds[name]), "documents": counts[name],
             "values": [raw for (_, raw), _ in values[name].most_common(examples)]} for name in sorted(kinds)]
