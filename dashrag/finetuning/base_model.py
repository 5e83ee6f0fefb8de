"""What ``--base`` names: an embedding component (``MiniLMEmbedding``, a JSON spec) or a model folder.

Fine-tuning starts from a sentence-transformers folder on this machine. A user names it the way
they name it in a tree: a registered embedding component backed by sentence-transformers
(``MiniLMEmbedding``, ``{"component": "SentenceTransformerEmbedding", "params": {"model": DIR}}``)
or a folder directly. Anything else is a ConfigError saying what ``--base`` accepts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashrag.core.config_json import loads_config
from dashrag.core.registry import all_components
from dashrag.embeddings.model_source import ModelSource, resolve_model
from dashrag.errors import ConfigError, ConfigIssue, excerpt


@dataclass(frozen=True)
class BaseWeights:
    """The folder training starts from, how the user named it, and what its files are."""

    named: Any
    source: ModelSource


def _embedding_names() -> list[str]:
    return [name for name, cls in all_components() if cls.META.kind == "embedding"]


def resolve_embedding_base(base: str, option: str = "--base") -> BaseWeights:
    """The sentence-transformers folder behind ``base`` (component name, JSON spec or folder)."""
    from dashrag.core.factory import build_component
    from dashrag.embeddings.sentence_transformer import SentenceTransformerBacked

    text = base.strip()
    if Path(text).expanduser().is_dir():
        source = resolve_model(text, what="sentence-transformers model")
        return BaseWeights(named=str(source.path), source=source)
    spec = loads_config(text, option) if text.startswith("{") else {"component": text, "params": {}}
    if spec.get("component") not in _embedding_names():
        raise ConfigError([ConfigIssue(option, f"{excerpt(text)} is not an embedding component or a model folder "
                                               f"(embeddings: {', '.join(_embedding_names())})")])
    component = build_component(spec, "embedding")
    if not isinstance(component, SentenceTransformerBacked):
        raise ConfigError([ConfigIssue(option, f"{spec['component']} does not run on sentence-transformers, so it "
                                               "cannot be fine-tuned here; use MiniLMEmbedding, "
                                               "SentenceTransformerEmbedding or a model folder")])
    return BaseWeights(named=component.to_config(), source=component.source())


def resolve_reranker_base(base: str, option: str = "--base") -> BaseWeights:
    """A cross-encoder starts from any transformer folder: a component as above, or a folder."""
    return resolve_embedding_base(base, option)
