"""The filter language's JSON Schema (Draft 2020-12), published as ``schemas/filter.schema.json``.

What a page or client can check before sending a filter: the shape (operators, operand types).
What only the corpus can tell (a number compared with a field of strings) is checked when the
filter runs, with the same path in the message.
"""

from __future__ import annotations

from typing import Any

SCALAR = {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}],
          "description": "A number, a string, an ISO 8601 date (compared as a date) or a boolean."}


def filter_schema() -> dict[str, Any]:
    scalar = {"$ref": "#/$defs/scalar"}
    orderable = {"oneOf": [{"type": "string"}, {"type": "number"}]}
    values = {"type": "array", "items": scalar}
    operators = {
        "type": "object", "minProperties": 1, "additionalProperties": False,
        "properties": {"$eq": scalar, "$ne": scalar, "$gt": orderable, "$gte": orderable, "$lt": orderable,
                       "$lte": orderable, "$in": values, "$nin": values, "$exists": {"type": "boolean"},
                       "$not": {"$ref": "#/$defs/operators"}},
        "description": "Operators on one field; every one must hold.",
    }
    filters = {"type": "array", "minItems": 1, "items": {"$ref": "#"}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://dashrag.dev/schemas/filter.schema.json",
        "title": "dashrag metadata filter",
        "description": ("Mongo-style: keys are field names (a value means $eq, an object holds operators) or "
                        "$and / $or / $not; every key must hold. A list field matches when any element does."),
        "type": "object",
        "properties": {"$and": filters, "$or": filters, "$not": {"$ref": "#"}},
        "patternProperties": {"^[^$]": {"oneOf": [scalar, {"$ref": "#/$defs/operators"}]}},
        "additionalProperties": False,
        "$defs": {"scalar": SCALAR, "operators": operators},
    }
