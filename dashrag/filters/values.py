"""The values a filter compares: four kinds, each with a sort key, so one comparison rule serves every engine.

* ``number``: JSON integers and floats (not booleans), compared as floats;
* ``date``: a string in ISO 8601 form (``2020-01-31``, ``2020-01-31T12:00:00Z``), compared as the instant
  (UTC when no offset is given), in seconds since 1970; such a string is a date and nothing else;
* ``string``: any other string, compared by code point;
* ``bool``: ``true`` / ``false``, equality only.

Why a date is recognised by its form: JSON has no date type, and a corpus that writes
``"published": "2020-01-31"`` means a date; comparing it as text would put ``2020-1-5``
after ``2020-10-01``. Null and objects are not comparable values.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

Kind = Literal["number", "date", "string", "bool"]

ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$")


@dataclass(frozen=True)
class Value:
    """A comparable value: its kind, what was written (for messages and engines), and its sort key."""

    kind: Kind
    raw: Any
    key: float | str | bool


def date_seconds(text: str) -> float | None:
    """Seconds since 1970 (UTC) of an ISO 8601 date or date-time; None when ``text`` is not one."""
    if not ISO_DATE.match(text):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:  # 2020-13-45: the form of a date, not a date
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def comparable(raw: Any) -> Value | None:
    """``raw`` as a comparable value; None for null, objects, lists and non-finite numbers."""
    if isinstance(raw, bool):
        return Value("bool", raw, raw)
    if isinstance(raw, (int, float)):
        return Value("number", raw, float(raw)) if math.isfinite(raw) else None
    if isinstance(raw, str):
        seconds = date_seconds(raw)
        return Value("string", raw, raw) if seconds is None else Value("date", raw, seconds)
    return None


def describe(kind: str) -> str:
    return {"number": "a number", "date": "a date", "string": "a string", "bool": "a boolean"}[kind]
