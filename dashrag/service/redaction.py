"""What the service's error bodies may not show: where it keeps things and which servers it talks to.

A 503 or a failed job's error is written from a library's message, which names folders (``/srv/rag/trees/
kw/dashrag.json: ...``) and endpoints (``HttpReranker at http://10.0.0.7:8080/rerank``). A client learns
nothing it needs from those and an attacker learns the layout of the server, so every such body passes
through :meth:`ServerLocations.hide` (docs/security.md): the operator's folders become ``<trees folder>``,
``<data root>``, ``<cache folder>``, the operator's endpoints ``<reranker endpoint>``, ``<llm endpoint>``,
``<qdrant>``, and any other absolute path ``<server path>``. A 503 (``urls=True``) hides every other URL too:
its messages come from the operator's settings and saved trees; a job's error may name the URLs of the
client's own config.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ABSOLUTE_PATH = re.compile(r"(?<![\w:/.<>~-])/(?:[^\s/'\"`(),:;]+/)*[^\s/'\"`(),:;]+")
ANY_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s'\"`<>()]+")


def _paths(path: Path | str | None) -> list[str]:
    if path is None:
        return []
    given = str(path).rstrip("/")
    return sorted({given, str(Path(path).resolve())} - {"", "/"})


def _urls(url: Any) -> list[str]:
    if not isinstance(url, str) or "://" not in url:
        return []
    parts = urlsplit(url)
    return [u for u in (url.rstrip("/"), f"{parts.scheme}://{parts.netloc}", parts.netloc) if u]


@dataclass(frozen=True)
class ServerLocations:
    """The operator's folders and endpoints, each with the placeholder that stands for it."""

    places: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, settings: Any) -> ServerLocations:
        places: list[tuple[str, str]] = []
        for path, name in ((settings.trees_dir, "<trees folder>"), (settings.data_root, "<data root>"),
                           (settings.cache_dir, "<cache folder>")):
            places += [(p, name) for p in _paths(path)]
        reranker = (settings.reranker or {}).get("params", {}).get("api_base") or settings.reranker_url
        llm = (settings.llm or {}).get("params", {}).get("api_base") or settings.llm_api_base
        for url, name in ((reranker, "<reranker endpoint>"), (llm, "<llm endpoint>"), (settings.qdrant, "<qdrant>")):
            places += [(u, name) for u in _urls(url)]
        if settings.qdrant and "://" not in settings.qdrant:
            places += [(p, "<qdrant>") for p in _paths(settings.qdrant)]
        return cls(tuple(sorted(places, key=lambda p: -len(p[0]))))  # longest first: a folder inside another

    def hide(self, text: str, *, urls: bool = False) -> str:
        for place, name in self.places:
            text = text.replace(place, name)
        if urls:
            text = ANY_URL.sub("<endpoint>", text)
        return ABSOLUTE_PATH.sub("<server path>", text)


__all__ = ["ServerLocations"]
