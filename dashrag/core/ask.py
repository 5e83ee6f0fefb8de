"""What a query asks besides its text: how many chunks, and which chunks are allowed.

``Retriever.retrieve(query, *, top_k=None, filters=None, restriction=None)`` checks both once,
at the node it is called on, and hands its components an ``Ask``: a frozen value, so a
composite that changes ``top_k`` for a child makes a new one (``with_top_k``) and the
restriction (a parsed filter, allowed documents) travels down unchanged. A keyword the
signature does not know is Python's TypeError (``topk=5`` was silently ignored when
``retrieve`` took ``**kwargs``); a ``top_k`` that is not a positive integer ("5", 2.7,
True, 0, -1) is a QueryError.

The node ``retrieve`` was called on records the filter it was asked (``filters``, as JSON) in its
trace node, beside ``params``: a trace read later (the page, an exported span) says which
documents were allowed. Its children are handed the parsed restriction, not the JSON, so the
filter is recorded once, at the root.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from numbers import Integral
from typing import TYPE_CHECKING, Any

from dashrag.errors import QueryError

if TYPE_CHECKING:  # the filter language is imported by the first query that has a restriction
    from dashrag.core.restriction import Restriction


def check_top_k(top_k: Any) -> int | None:
    """``top_k`` as an int, or None (the node's configured ``top_k``); anything but a positive integer raises."""
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, Integral):
        raise QueryError(f"top_k must be a positive integer, not {type(top_k).__name__} {top_k!r}")
    if top_k < 1:
        raise QueryError(f"top_k must be a positive integer, not {top_k}")
    return int(top_k)


@dataclass(frozen=True)
class Ask:
    top_k: int | None = None
    restriction: Restriction | None = None
    filters: Mapping[str, Any] | None = field(default=None, compare=False)  # as asked, for the trace

    def traced(self) -> dict[str, Any]:
        """What the trace node of the node asked records of the ask: its filter, when one was given as JSON."""
        return {} if self.filters is None else {"filters": self.filters}

    @classmethod
    def of(cls, top_k: Any = None, filters: Any = None, restriction: Any = None) -> Ask:
        """From ``retrieve``'s keywords: ``filters`` (a filter's JSON, docs/filters.md) and ``restriction``
        (a :class:`Restriction`) must both hold."""
        if restriction is None and filters is None:
            return cls(check_top_k(top_k), None)
        from dashrag.core.restriction import Restriction

        if restriction is not None and not isinstance(restriction, Restriction):
            raise QueryError(f"restriction must be a Restriction, not {type(restriction).__name__}")
        asked = None
        if filters is not None:
            wanted = Restriction.where(filters)
            restriction = wanted if restriction is None else restriction.narrowed(wanted)
            asked = json.loads(filters) if isinstance(filters, (str, bytes)) else \
                filters if isinstance(filters, Mapping) else None  # a parsed filter has no JSON to show
        return cls(check_top_k(top_k), restriction, asked)

    def with_top_k(self, top_k: int | None) -> Ask:
        return replace(self, top_k=top_k)
