"""Metadata filters: one Mongo-style filter language for every retriever, engine and face (docs/filters.md).

``parse_filter(json)`` gives a typed syntax tree once (errors name the JSON path in the filter);
it is evaluated over a chunk set's metadata columns as a document mask (``document_mask``),
compiled to SQL for PostgreSQL (``filters/sql.py``) and to a Qdrant payload filter
(``filters/qdrant.py``). The JSON Schema of the language is ``filter_schema()``.
"""

from dashrag.filters.ast import NODE_TYPES, And, Compare, Exists, Filter, In, Not, Or
from dashrag.filters.columns import MetadataColumns
from dashrag.filters.evaluate import document_mask
from dashrag.filters.parse import parse_filter
from dashrag.filters.schema import filter_schema

__all__ = ["NODE_TYPES", "And", "Compare", "Exists", "Filter", "In", "MetadataColumns", "Not", "Or", "document_mask",
           "filter_schema", "parse_filter"]
