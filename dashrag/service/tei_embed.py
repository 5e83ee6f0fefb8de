"""Query embeddings from a Text Embeddings Inference server, as the reference service gets them.

With ``RAG_EMBED_URL`` set, the Qdrant collections' queries are embedded by ``POST {url}/embed`` with
``{"inputs": query}`` (one query, a string, as the reference sends it), answered ``[[float, ...]]`` (the first
row is the query's vector), each request within ``embedding_timeout_sec``, instead of by a local embedding
component (``qdrant_embedding``). The URL is the operator's (an environment variable or a flag), not a
client's, so it is outside the trust boundary for configs sent over HTTP (docs/security.md). One kept-alive
HTTP client, closed at shutdown; a redirect is never followed.

Every failure (unreachable, a status other than 200, an answer that is not a finite row) is an
:class:`~dashrag.errors.EngineError` naming the server, which the pipeline answers 503 at the ``search`` step.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Sequence

import httpx
import numpy as np

from dashrag.errors import EngineError
from dashrag.urls import hide_url_secrets

PROBE = "dimension probe"


class TeiQueryEmbedder:
    """What a Qdrant collection needs of its embedding: ``component_name``, ``dimension``, ``embed_queries``."""

    component_name = "TEI embedding server"

    def __init__(self, base_url: str, timeout_sec: float):
        self.url = base_url.rstrip("/") + "/embed"
        self.display = hide_url_secrets(self.url)
        self._client = httpx.Client(timeout=timeout_sec, follow_redirects=False)
        self._dimension: int | None = None
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """The server's vector width, asked once (embedding a probe) and kept."""
        with self._lock:
            if self._dimension is None:
                self._dimension = int(self._embed([PROBE]).shape[1])
            return self._dimension

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts))

    def _embed(self, texts: list[str]) -> np.ndarray:
        """One request per text, as the reference asks; the rows stacked (each checked, one width)."""
        rows = [self._embed_one(text) for text in texts]
        return checked_rows(rows, len(texts), f"{self.component_name} at {self.display}")

    def _embed_one(self, text: str) -> Any:
        try:
            response = self._client.post(self.url, json={"inputs": text})
        except httpx.HTTPError as exc:
            raise EngineError(f"{self.component_name} at {self.display}: request failed ({type(exc).__name__})") \
                from None
        if response.status_code != 200:
            raise EngineError(f"{self.component_name} at {self.display} answered HTTP {response.status_code}")
        try:
            rows = response.json()
        except ValueError:
            rows = None
        return checked_rows(rows[:1] if isinstance(rows, list) else rows, 1,
                            f"{self.component_name} at {self.display}")[0].tolist()

    def close(self) -> None:
        self._client.close()


def checked_rows(rows: Any, count: int, where: str) -> np.ndarray:
    """``rows`` as a (count, d) float32 array, or an EngineError saying what the answer is instead."""
    if not isinstance(rows, list) or len(rows) != count or not all(isinstance(r, list) and r for r in rows):
        raise EngineError(f"{where} answered something that is not {count} vector(s) ([[float, ...]])")
    if len({len(r) for r in rows}) != 1:
        raise EngineError(f"{where} answered vectors of different lengths")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for r in rows for v in r):
        raise EngineError(f"{where} answered a vector holding something that is not a finite number")
    return np.asarray(rows, dtype=np.float32)
