"""Trace nodes: the JSON record of what one component did for one query.

A node is ``{component, params, query, elapsed_ms, output, children, selection?}``;
a composite's node holds its children's nodes, so one trace explains a whole tree.
``TraceSettings`` keeps traces small by default (no chunk text) while letting a
user ask for everything (``set_trace_settings(include_text=True)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from dashrag.documents.model import ScoredChunk
from dashrag.documents.scored_chunks import as_trace_output


@dataclass
class TraceSettings:
    include_text: bool = False
    max_output: int | None = None  # cap the chunks listed per node; None lists all


def trace_node(
    *,
    component: str,
    params: dict[str, Any],
    query: str,
    elapsed_ms: float,
    output: Sequence[ScoredChunk],
    settings: TraceSettings,
    children: Sequence[dict] = (),
    selection: dict | None = None,
    **extra: Any,
) -> dict[str, Any]:
    node: dict[str, Any] = {
        "component": component,
        "params": params,
        "query": query,
        "elapsed_ms": round(elapsed_ms, 3),
        "output": as_trace_output(output, settings.include_text, settings.max_output),
        "children": list(children),
    }
    if selection is not None:
        node["selection"] = selection
    node.update(extra)
    return node


def format_trace(node: dict[str, Any], indent: int = 0) -> str:
    """A plain-text tree of a trace, for the CLI: one line per node, then its top chunks."""
    pad = "  " * indent
    lines = [f"{pad}{node['component']}  {node['elapsed_ms']:.1f} ms  -> {len(node['output'])} chunks"]
    for item in node["output"][:5]:
        lines.append(
            f"{pad}  · chunk {item['chunk_id']} (doc {item['document_id']}#{item['position']}) "
            f"score {item['score']:.4f}"
        )
    if "selection" in node:
        lines.append(f"{pad}  selection: {node['selection'].get('summary', node['selection'])}")
    for child in node["children"]:
        lines.append(format_trace(child, indent + 1))
    return "\n".join(lines)
