"""Step 8: the reranker of ``POST /retrieve``: any project component that scores texts for a query.

``RAG_RERANKER_URL`` configures the project's :class:`~dashrag.retrievers.http_reranker.HttpReranker`
(TEI-style ``/rerank``; key by reference, ``RAG_RERANKER_API_KEY`` by default); a
``reranker`` component config names any component that scores texts: one with
``rerank_texts(query, texts)`` (HttpReranker) or ``predict(pairs)`` (the cross-encoder).
The chunks come from several collections, so the reranker scores their *texts*
(chunk ids are not shared across collections).
"""

from __future__ import annotations

from typing import Sequence

from dashrag.core.component import ConfigObject
from dashrag.core.factory import build_component
from dashrag.errors import ConfigError


class TextReranker:
    def __init__(self, component: ConfigObject):
        if not hasattr(component, "rerank_texts") and not hasattr(component, "predict"):
            raise ConfigError(f"reranker: {component.component_name} cannot score texts "
                              "(it needs rerank_texts or predict, as HttpReranker and CrossEncoderRetriever have)")
        self.component = component

    @property
    def name(self) -> str:
        return self.component.component_name

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if hasattr(self.component, "rerank_texts"):
            return [float(s) for s in self.component.rerank_texts(query, list(texts))]
        return [float(s) for s in self.component.predict([(query, t) for t in texts])]  # type: ignore[attr-defined]

    def close(self) -> None:
        self.component.close()


def reranker_from_settings(config: dict | None, url: str | None, key_var: str, timeout: float) -> TextReranker | None:
    if config is None and url is None:
        return None
    config = config or {"component": "HttpReranker", "params": {
        "api_base": url, "timeout_s": timeout,
        "credential": {"component": "EnvCredential", "params": {"var": key_var}}}}
    return TextReranker(build_component(config, "retriever"))
