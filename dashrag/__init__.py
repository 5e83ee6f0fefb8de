"""dashrag: retriever components assembled into trees from JSON.

Quick start::

    import dashrag
    retriever = dashrag.build(config, dashrag.Corpus.from_path("docs/"), workdir="work/")
    chunks, trace = retriever.retrieve("what is BM25?")
    retriever.save("saved/")
    same = dashrag.load("saved/")

The names below are imported on first use (PEP 562), and no component module is
imported until a tree names it (dashrag/core/registry.py): ``import dashrag`` costs
almost nothing, and a command pays only for what it uses.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dashrag.api import build, build_tree, load, save, update, update_tree
    from dashrag.core.factory import build_component
    from dashrag.core.restriction import Restriction
    from dashrag.core.validation import validate_and_transform
    from dashrag.documents.corpus import Corpus
    from dashrag.errors import DashragError
    from dashrag.rerank import MMRConfig, RerankPipeline, mmr_rerank

__version__ = "0.1.0"

_LAZY = {
    "build": "dashrag.api",
    "build_tree": "dashrag.api",
    "load": "dashrag.api",
    "save": "dashrag.api",
    "update": "dashrag.api",
    "update_tree": "dashrag.api",
    "build_component": "dashrag.core.factory",
    "validate_and_transform": "dashrag.core.validation",
    "Corpus": "dashrag.documents.corpus",
    "Restriction": "dashrag.core.restriction",
    "DashragError": "dashrag.errors",
    "RerankPipeline": "dashrag.rerank",
    "MMRConfig": "dashrag.rerank",
    "mmr_rerank": "dashrag.rerank",
}

__all__ = ["build", "build_tree", "load", "save", "update", "update_tree", "build_component", "validate_and_transform",
           "Corpus", "Restriction", "DashragError", "RerankPipeline", "MMRConfig", "mmr_rerank", "__version__"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dashrag' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# OpenTelemetry export when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/otel.md); otherwise two variable reads.
_telemetry = import_module("dashrag.telemetry")
_telemetry.start_from_environment()
